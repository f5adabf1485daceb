import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { type RunStore, RunNotFoundError, RunOwnedError, createFileRunStore, createMemoryRunStore } from '../src/index.js'

const made: string[] = []
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function runsDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'locus-ownership-'))
  made.push(dir)
  return dir
}

const STORES: readonly (readonly [string, () => RunStore])[] = [
  ['memory', () => createMemoryRunStore()],
  ['file', () => createFileRunStore(runsDir())],
]

describe.each(STORES)('store.claim on the %s store', (_name, makeStore) => {
  it('gives a run to one claimant at a time: a second claim is RUN_OWNED until the first is released, then succeeds', async () => {
    const store = makeStore()
    await (await store.createExecution({ runId: 'run-1', kind: 'root' })).close()
    const first = await store.claim({ runId: 'run-1', executionId: 'run-1' })
    expect(first.runId).toBe('run-1')
    expect(first.tookOver).toBeUndefined()
    const refused = await store.claim({ runId: 'run-1', executionId: 'resume-001' }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(RunOwnedError.isInstance(refused)).toBe(true)
    expect(refused).toMatchObject({ code: 'RUN_OWNED', runId: 'run-1', message: expect.stringMatching(/only one execution/i) })
    await first.release()
    await first.release()
    const second = await store.claim({ runId: 'run-1', executionId: 'resume-001' })
    await second.release()
  })

  it('claims runs independently of each other, and refuses an unknown run with RUN_NOT_FOUND', async () => {
    const store = makeStore()
    await (await store.createExecution({ runId: 'a', kind: 'root' })).close()
    await (await store.createExecution({ runId: 'b', kind: 'root' })).close()
    const a = await store.claim({ runId: 'a', executionId: 'a' })
    const b = await store.claim({ runId: 'b', executionId: 'b' })
    await Promise.all([a.release(), b.release()])
    await expect(store.claim({ runId: 'nowhere', executionId: 'nowhere' })).rejects.toSatisfy((error) => RunNotFoundError.isInstance(error))
  })

  it('of many claims made at once, exactly one wins', async () => {
    const store = makeStore()
    await (await store.createExecution({ runId: 'contended', kind: 'root' })).close()
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, (_, index) => store.claim({ runId: 'contended', executionId: `resume-00${index}` })))
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1)
    const refused = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason as { readonly code: string }] : []))
    expect(refused.map((error) => error.code)).toEqual(Array(7).fill('RUN_OWNED'))
  })
})

describe('store.claim on the file store keeps owner.lock, as the runtime always did', () => {
  it('writes the lock with the owner and its execution, updates the execution, and removes it on release', async () => {
    const dir = runsDir()
    const store = createFileRunStore(dir)
    await (await store.createExecution({ runId: 'run-1', kind: 'root' })).close()
    const ownership = await store.claim({ runId: 'run-1', executionId: 'resume-001' })
    const lockPath = join(dir, 'run-1', 'owner.lock')
    expect(JSON.parse(readFileSync(lockPath, 'utf8'))).toMatchObject({ pid: process.pid, hostname: hostname(), runId: 'run-1', executionId: 'resume-001' })
    ownership.setExecutionId('resume-002')
    expect(JSON.parse(readFileSync(lockPath, 'utf8'))).toMatchObject({ executionId: 'resume-002' })
    await ownership.release()
    expect(readdirSync(join(dir, 'run-1')).filter((name) => name.startsWith('owner.lock'))).toEqual([])
  })

  it('takes over the lock of a process that died, and names it in tookOver', async () => {
    const dir = runsDir()
    const store = createFileRunStore(dir)
    await (await store.createExecution({ runId: 'run-1', kind: 'root' })).close()
    const dead = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout)
    const stale = { pid: dead, hostname: hostname(), runId: 'run-1', executionId: 'run-1', startedAt: '2026-01-15T09:30:12.000Z', processStartedAt: '2026-01-15T09:30:11.000Z', processStart: null, token: 'feedc0ffee0123456789abcdef012345' }
    writeFileSync(join(dir, 'run-1', 'owner.lock'), `${JSON.stringify(stale)}\n`)
    const ownership = await store.claim({ runId: 'run-1', executionId: 'resume-001' })
    expect(ownership.tookOver).toEqual({ previous: stale })
    await ownership.release()
  })
})
