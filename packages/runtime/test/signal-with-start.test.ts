// Signal-with-start: a signal given with the start is checked before anything is written, journaled
// as the run's first signal right after run_start, and taken by waitForSignal at once (no wait opens);
// later signals go on from the next mailbox slot, and a resume neither repeats nor loses it.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { JournalLine } from '@locus/journal'
import { createRuntime, defineWorkflow } from '@locus/runtime'
import { type RunStore, createFileRunStore } from '@locus/store'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function fileStore(): RunStore {
  const dir = mkdtempSync(join(tmpdir(), 'locus-signal-start-'))
  dirs.push(dir)
  return createFileRunStore(dir)
}

async function allLines(store: RunStore, runId: string): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  for (const info of await store.listExecutions(runId)) for await (const line of store.readLines(info)) lines.push(line)
  return lines
}

const kickoff = defineWorkflow({
  name: 'kickoff',
  signals: { go: z.object({ by: z.string() }), more: z.number() },
  async run({ waitForSignal }) {
    const go = await waitForSignal('go')
    const more = await waitForSignal('more')
    return { ok: true, go, more }
  },
})

describe('signal-with-start', () => {
  it('journals the signal right after run_start, so waitForSignal returns it without waiting; the next signal takes slot 1', async () => {
    const store = fileStore()
    const runtime = createRuntime({ workflows: [kickoff], store })
    const handle = await runtime.start('kickoff', { startSignal: { name: 'go', payload: { by: 'ops' }, from: 'key-1234' } })
    const sent = await runtime.signal(handle.runId, 'more', 7, { from: 'key-1234', via: 'api' })
    expect(sent).toEqual({ ok: true, status: 'stored', signalSeq: 1 })
    const run = await handle.done
    expect(run.result).toEqual({ ok: true, go: { by: 'ops' }, more: 7 })
    const lines = await allLines(store, handle.runId)
    expect(lines[0]?.type).toBe('run_start')
    expect(lines[1]).toMatchObject({ type: 'signal_received', name: 'go', payload: { by: 'ops' }, from: 'key-1234', via: 'start', signalSeq: 0 })
    // The first wait found it buffered: it ended without starting; only the second waited.
    const waits = lines.filter((line) => line.type === 'signal_wait_start' || line.type === 'signal_wait_end')
    expect(waits.map((line) => [line.type, line.name])).toEqual([
      ['signal_wait_end', 'go'],
      ['signal_wait_start', 'more'],
      ['signal_wait_end', 'more'],
    ])
    expect(lines.filter((line) => line.type === 'signal_received').map((line) => line.signalSeq)).toEqual([0, 1])
  })

  it('refuses an undeclared name or a payload failing its schema before anything is written', async () => {
    const store = fileStore()
    const runtime = createRuntime({ workflows: [kickoff], store })
    await expect(runtime.start('kickoff', { runId: 'undeclared', startSignal: { name: 'stop', payload: {} } })).rejects.toMatchObject({
      code: 'RUN_OPTIONS_INVALID',
      message: expect.stringContaining('Declared: go, more') as unknown,
    })
    await expect(runtime.start('kickoff', { runId: 'bad-payload', startSignal: { name: 'go', payload: { by: 3 } } })).rejects.toMatchObject({
      code: 'RUN_OPTIONS_INVALID',
      issues: [expect.stringContaining('startSignal.payload.by') as unknown],
    })
    expect(await store.hasRun('undeclared')).toBe(false)
    expect(await store.hasRun('bad-payload')).toBe(false)
  })

  it('a resume keeps the start signal once: served from the journal, not sent again', async () => {
    const store = fileStore()
    const first = await createRuntime({ workflows: [kickoff], store }).start('kickoff', { startSignal: { name: 'go', payload: { by: 'ops' } } })
    // Suspended while it waits for `more`: the start signal was taken already.
    await new Promise<void>((resolve) => {
      const stop = first.subscribe((line) => {
        if (line.type === 'signal_wait_start') {
          queueMicrotask(stop)
          resolve()
        }
      })
    })
    first.suspend('restart')
    expect((await first.done).suspended).toBe(true)
    const runtime = createRuntime({ workflows: [kickoff], store })
    const resumed = await runtime.resume(first.runId)
    await runtime.signal(first.runId, 'more', 1)
    expect((await resumed.done).result).toEqual({ ok: true, go: { by: 'ops' }, more: 1 })
    const received = (await allLines(store, first.runId)).filter((line) => line.type === 'signal_received')
    expect(received.map((line) => [line.name, line.signalSeq, line.via])).toEqual([
      ['go', 0, 'start'],
      ['more', 1, 'host'],
    ])
  })
})
