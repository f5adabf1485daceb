import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readJournal } from '@locus/journal'
import { createScriptedHost, defineWorkflow, resumeRun, runWorkflowScript, startWorkflowRun } from '@locus/runtime'
import { describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { createRunId } from '../src/ids.js'
import { createFileRunStore } from '@locus/store'
import { RUN_ID_ATTEMPTS, launchRun } from '../src/run-workflow-script.js'

/** The file store's ownership lock, in the run directory (the layout is the store's; this test reads it as a user would). */
const RUN_LOCK_FILE = 'owner.lock'
import { fanOut } from './fixtures/fan-out-workflow.js'
import { linesOfType, settle, tempRunsDir } from './helpers.js'

const answering = () => createScriptedHost({ rules: [{ steps: [{ text: 'live answer' }] }] })

const twoCalls = defineWorkflow({
  name: 'two-calls',
  async run({ agent }) {
    return { ok: true, answers: [(await agent('first')).answer, (await agent('second')).answer] }
  },
})

/** Every file under a directory with its bytes, to show that nothing in it changed. */
function snapshot(directory: string): Record<string, string> {
  const files: Record<string, string> = {}
  const walk = (current: string): void => {
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      const path = join(current, entry.name)
      if (entry.isDirectory()) walk(path)
      else files[relative(directory, path)] = `${statSync(path).mtimeMs}:${readFileSync(path, 'base64')}`
    }
  }
  walk(directory)
  return files
}

/** The pid of a process that has exited (and been reaped): nobody owns it now. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' })
  return Number(child.stdout)
}

function lockPath(runsDir: string, runId: string): string {
  return join(runsDir, runId, RUN_LOCK_FILE)
}

function writeLock(runsDir: string, runId: string, fields: Record<string, unknown>): void {
  const lock = {
    pid: deadPid(),
    hostname: hostname(),
    runId,
    executionId: runId,
    startedAt: '2026-01-15T09:30:12.000Z',
    processStartedAt: '2026-01-15T09:30:11.000Z',
    processStart: null,
    token: 'feedc0ffee0123456789abcdef012345',
    ...fields,
  }
  writeFileSync(lockPath(runsDir, runId), `${JSON.stringify(lock)}\n`)
}

function lockLeftovers(runsDir: string, runId: string): string[] {
  return readdirSync(join(runsDir, runId)).filter((name) => name.startsWith(RUN_LOCK_FILE))
}

/** Runs the fan-out fixture in a child process and kills it with SIGKILL once three calls ended and three hang. */
async function killMidFanOut(runsDir: string, runId: string): Promise<number> {
  const fixture = fileURLToPath(new URL('./fixtures/fan-out-workflow.ts', import.meta.url))
  const child = spawn(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', fixture, runsDir, runId], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const journalPath = join(runsDir, runId, 'journal.jsonl')
  for (let waited = 0; waited < 600; waited += 1) {
    if (existsSync(journalPath)) {
      const text = readFileSync(journalPath, 'utf8')
      if ((text.match(/"type":"agent_end"/g) ?? []).length === 3 && (text.match(/"type":"agent_start"/g) ?? []).length === 6) break
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  expect(child.exitCode, `the workflow process ended before it was killed: ${stderr}`).toBeNull()
  child.kill('SIGKILL')
  await exited
  expect(existsSync(join(runsDir, runId, 'result.json'))).toBe(false)
  return child.pid ?? -1
}

/** What one resume execution's journal must look like: one run_start, seq strictly increasing, a run_end. */
function expectOneCleanExecution(journalPath: string): void {
  const journal = readJournal(journalPath)
  expect(journal.invalid).toEqual([])
  expect(journal.tornTail).toBeNull()
  expect(linesOfType(journal.lines, 'run_start')).toHaveLength(1)
  expect(linesOfType(journal.lines, 'run_end')).toHaveLength(1)
  const seqs = journal.lines.map((line) => line.seq)
  for (let index = 1; index < seqs.length; index += 1) expect(seqs[index]).toBeGreaterThan(seqs[index - 1] ?? 0)
}

describe('run ids', () => {
  it('keeps the readable time stamp and adds 12 base-32 characters (60 bits) from the cryptographic source', () => {
    const random = vi.spyOn(Math, 'random')
    const id = createRunId(new Date('2026-01-15T09:30:12.345Z'))
    expect(id).toMatch(/^20260115-093012-[0-9a-hjkmnp-tv-z]{12}$/)
    expect(random).not.toHaveBeenCalled()
    random.mockRestore()
    expect(createRunId(new Date(0), (size) => new Uint8Array(size).fill(0))).toBe('19700101-000000-000000000000')
    expect(createRunId(new Date(0), (size) => new Uint8Array(size).fill(255))).toBe('19700101-000000-zzzzzzzzzzzz')
    const now = new Date()
    const ids = new Set(Array.from({ length: 20_000 }, () => createRunId(now)))
    expect(ids.size).toBe(20_000)
  })

  it('replaces a generated id whose directory already exists with a fresh one, leaving the existing run alone', async () => {
    const runsDir = tempRunsDir()
    mkdirSync(join(runsDir, 'clash'))
    writeFileSync(join(runsDir, 'clash', 'journal.jsonl'), '{"someone":"else"}\n')
    const before = snapshot(join(runsDir, 'clash'))
    const ids = ['clash', 'clash', 'fresh']
    const newRunId = vi.fn(() => ids.shift() ?? 'spare')
    const handle = launchRun(twoCalls, { runsDir, host: answering() }, { newRunId })
    const result = await handle.done
    expect(newRunId).toHaveBeenCalledTimes(3)
    expect(result).toMatchObject({ runId: 'fresh', disposition: 'completed' })
    expect(snapshot(join(runsDir, 'clash'))).toEqual(before)
  })

  it(`gives up with RUN_EXISTS after ${RUN_ID_ATTEMPTS} generated ids that are all taken`, async () => {
    const runsDir = tempRunsDir()
    mkdirSync(join(runsDir, 'always'))
    const newRunId = vi.fn(() => 'always')
    await expect(launchRun(twoCalls, { runsDir, host: answering() }, { newRunId }).done).rejects.toMatchObject({ code: 'RUN_EXISTS' })
    expect(newRunId).toHaveBeenCalledTimes(RUN_ID_ATTEMPTS)
  })
})

describe('an existing run id', () => {
  it('is refused with RUN_EXISTS, and nothing is written to the existing run', async () => {
    const runsDir = tempRunsDir()
    const first = await runWorkflowScript(twoCalls, { runsDir, runId: 'taken', host: answering() })
    expect(first.ok).toBe(true)
    const before = snapshot(first.runDir)
    const host = answering()
    await expect(runWorkflowScript(twoCalls, { runsDir, runId: 'taken', host })).rejects.toMatchObject({
      name: 'RunExistsError',
      code: 'RUN_EXISTS',
      runId: 'taken',
      message: expect.stringMatching(/Run "taken" exists already/),
    })
    await expect(startWorkflowRun(twoCalls, { runsDir, runId: 'taken', host })).rejects.toMatchObject({ code: 'RUN_EXISTS' })
    expect(host.sessionCount).toBe(0)
    expect(snapshot(first.runDir)).toEqual(before)
  })

  it('is refused even while the run is still running, without touching its journal', async () => {
    const runsDir = tempRunsDir()
    const handle = await startWorkflowRun(twoCalls, { runsDir, runId: 'live', host: createScriptedHost({ rules: [{ steps: [{ hang: true }] }] }) })
    await settle()
    const journal = readFileSync(join(runsDir, handle.runId, 'journal.jsonl'))
    await expect(startWorkflowRun(twoCalls, { runsDir, runId: 'live', host: answering() })).rejects.toMatchObject({ code: 'RUN_EXISTS' })
    expect(readFileSync(join(runsDir, handle.runId, 'journal.jsonl'))).toEqual(journal)
    handle.cancel()
    await handle.done
  })
})

describe('execution ids', () => {
  it('takes the next free number, skipping those another process claimed (exclusive mkdir in the file store, no sharing)', async () => {
    const runsDir = tempRunsDir()
    const rootDir = join(runsDir, 'run')
    mkdirSync(join(rootDir, 'executions', 'resume-001'), { recursive: true })
    // Another process claimed resume-002 meanwhile.
    mkdirSync(join(rootDir, 'executions', 'resume-002'))
    const store = createFileRunStore(runsDir)
    expect((await store.createExecution({ runId: 'run', kind: 'resume' })).executionId).toBe('resume-003')
    expect((await store.createExecution({ runId: 'run', kind: 'resume' })).executionId).toBe('resume-004')
    expect((await store.createExecution({ runId: 'run', kind: 'replay' })).executionId).toBe('replay-001')
  })
})

describe('the ownership lock', () => {
  it('is held by a running run, refuses a resume meanwhile with RUN_OWNED naming the owner, and is gone when the run ends', async () => {
    const runsDir = tempRunsDir()
    const handle = await startWorkflowRun(twoCalls, { runsDir, runId: 'owned', host: createScriptedHost({ rules: [{ steps: [{ hang: true }] }] }) })
    await settle()
    const lock = JSON.parse(readFileSync(lockPath(runsDir, 'owned'), 'utf8')) as Record<string, unknown>
    expect(lock).toMatchObject({ pid: process.pid, hostname: hostname(), runId: 'owned', executionId: 'owned' })
    expect(typeof lock.startedAt).toBe('string')
    expect(typeof lock.processStartedAt).toBe('string')
    const host = answering()
    await expect(resumeRun('owned', twoCalls, { runsDir, host })).rejects.toMatchObject({
      code: 'RUN_OWNED',
      owner: expect.objectContaining({ pid: process.pid, executionId: 'owned' }),
      message: expect.stringMatching(new RegExp(`owned by process ${process.pid} on .* \\(execution owned, since `)),
    })
    expect(host.sessionCount).toBe(0)
    expect(existsSync(join(runsDir, 'owned', 'executions'))).toBe(false)
    handle.cancel()
    expect((await handle.done).disposition).toBe('cancelled')
    expect(lockLeftovers(runsDir, 'owned')).toEqual([])
  })

  it('is released however the execution ends: completed, failed, thrown, cancelled, or refused input', async () => {
    const runsDir = tempRunsDir()
    await runWorkflowScript(twoCalls, { runsDir, runId: 'completed', host: answering() })
    expect(lockLeftovers(runsDir, 'completed')).toEqual([])
    const failed = await runWorkflowScript(() => ({ ok: false }), { runsDir, runId: 'failed' })
    expect(failed.disposition).toBe('failed')
    expect(lockLeftovers(runsDir, 'failed')).toEqual([])
    await runWorkflowScript(() => { throw new Error('boom') }, { runsDir, runId: 'thrown' })
    expect(lockLeftovers(runsDir, 'thrown')).toEqual([])
    const controller = new AbortController()
    controller.abort()
    await runWorkflowScript(twoCalls, { runsDir, runId: 'cancelled', host: answering(), signal: controller.signal })
    expect(lockLeftovers(runsDir, 'cancelled')).toEqual([])

    const withInput = defineWorkflow({ name: 'with-input', input: z.object({ n: z.number() }), run: async ({ input }) => ({ ok: true, n: input.n }) })
    await runWorkflowScript(withInput, { runsDir, runId: 'input', input: { n: 1 } })
    await expect(resumeRun('input', withInput, { runsDir, input: { n: 'not a number' } })).rejects.toMatchObject({ code: 'WORKFLOW_INPUT_INVALID' })
    expect(lockLeftovers(runsDir, 'input')).toEqual([])
    expect(existsSync(join(runsDir, 'input', 'executions')) ? readdirSync(join(runsDir, 'input', 'executions')) : []).toEqual([])
    const resumed = await resumeRun('input', withInput, { runsDir })
    expect(resumed.executionId).toBe('resume-001')
    expect(lockLeftovers(runsDir, 'input')).toEqual([])
  })

  it('four concurrent resumes of a killed run: one resumes it, three are refused with RUN_OWNED', async () => {
    const runsDir = tempRunsDir()
    const killedPid = await killMidFanOut(runsDir, 'contended')
    expect(JSON.parse(readFileSync(lockPath(runsDir, 'contended'), 'utf8'))).toMatchObject({ pid: killedPid, executionId: 'contended' })
    const rootJournal = readFileSync(join(runsDir, 'contended', 'journal.jsonl'))

    const hosts = [0, 1, 2, 3].map(() => answering())
    const outcomes = await Promise.allSettled(hosts.map((host) => resumeRun('contended', fanOut, { runsDir, host })))
    const resumed = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []))
    const refused = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason as { code: string; message: string }] : []))
    expect(resumed).toHaveLength(1)
    expect(resumed[0]).toMatchObject({ disposition: 'completed', executionId: 'resume-001', replayed: 3, live: 3 })
    expect(refused.map((error) => error.code)).toEqual(['RUN_OWNED', 'RUN_OWNED', 'RUN_OWNED'])
    expect(refused[0]?.message).toMatch(new RegExp(`process ${process.pid} .*execution resume-001`))
    // Only the winner asked the host, and only for the three calls the killed run never finished.
    expect(hosts.map((host) => host.sessionCount).sort()).toEqual([0, 0, 0, 3])
    expect(hosts.flatMap((host) => host.calls.map((call) => call.prompt)).sort()).toEqual(['item 3', 'item 4', 'item 5'])

    expect(readdirSync(join(runsDir, 'contended', 'executions'))).toEqual(['resume-001'])
    const journalPath = join(runsDir, 'contended', 'executions', 'resume-001', 'journal.jsonl')
    expectOneCleanExecution(journalPath)
    const logs = linesOfType(readJournal(journalPath).lines, 'log')
    expect(logs).toContainEqual(expect.objectContaining({ level: 'warn', message: expect.stringContaining(`from process ${killedPid} (execution contended)`) }))
    expect(readFileSync(join(runsDir, 'contended', 'journal.jsonl'))).toEqual(rootJournal)
    expect(lockLeftovers(runsDir, 'contended')).toEqual([])
  }, 60_000)

  it('four resumes in separate processes race for a killed run: exactly one wins, three are refused with RUN_OWNED', async () => {
    const runsDir = tempRunsDir()
    const killedPid = await killMidFanOut(runsDir, 'raced')
    const gate = join(runsDir, 'gate')
    const contender = fileURLToPath(new URL('./fixtures/resume-contender.ts', import.meta.url))
    const children: ChildProcess[] = [0, 1, 2, 3].map(() =>
      spawn(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', contender, runsDir, 'raced', gate], { stdio: ['ignore', 'pipe', 'pipe'] }),
    )
    let exitedCount = 0
    const reports = children.map(
      (child) =>
        new Promise<{ outcome: string; code?: string; message?: string; disposition?: string; executionId?: string; prompts?: string[]; stderr: string }>((resolve) => {
          let stdout = ''
          let stderr = ''
          child.stdout?.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
          child.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
          child.once('close', () => {
            exitedCount += 1
            const last = stdout.trim().split('\n').at(-1) ?? ''
            resolve({ ...(last.startsWith('{') ? (JSON.parse(last) as { outcome: string }) : { outcome: 'no report' }), stderr })
          })
        }),
    )
    // The winner's live calls wait for the gate; open it once the three others have given up (or after a bound).
    for (let waited = 0; waited < 1_200 && exitedCount < 3; waited += 1) await new Promise((resolve) => setTimeout(resolve, 50))
    writeFileSync(gate, 'open')
    const results = await Promise.all(reports)

    const winners = results.filter((result) => result.outcome === 'resumed')
    const losers = results.filter((result) => result.outcome === 'refused')
    expect(winners, JSON.stringify(results)).toHaveLength(1)
    expect(winners[0]).toMatchObject({ disposition: 'completed', executionId: 'resume-001' })
    expect(winners[0]?.prompts?.sort()).toEqual(['item 3', 'item 4', 'item 5'])
    expect(losers.map((result) => result.code)).toEqual(['RUN_OWNED', 'RUN_OWNED', 'RUN_OWNED'])

    expect(readdirSync(join(runsDir, 'raced', 'executions'))).toEqual(['resume-001'])
    const journalPath = join(runsDir, 'raced', 'executions', 'resume-001', 'journal.jsonl')
    expectOneCleanExecution(journalPath)
    const lines = readJournal(journalPath).lines
    // The winner may be the taker that removed the dead lock, or a rival that created a fresh one right after it.
    for (const log of linesOfType(lines, 'log')) expect(log.message).toContain(`from process ${killedPid} `)
    // Calls the killed run finished were replayed, not asked again.
    expect(linesOfType(lines, 'agent_end').filter((line) => line.replayed === true)).toHaveLength(3)
    expect(lockLeftovers(runsDir, 'raced')).toEqual([])
  }, 120_000)

  it('takes over a stale lock whose process has died, and says so in the journal', async () => {
    const runsDir = tempRunsDir()
    await runWorkflowScript(twoCalls, { runsDir, runId: 'stale', host: answering() })
    const pid = deadPid()
    writeLock(runsDir, 'stale', { pid, executionId: 'stale' })
    const host = answering()
    const resumed = await resumeRun('stale', twoCalls, { runsDir, host })
    expect(resumed).toMatchObject({ disposition: 'completed', executionId: 'resume-001', replayed: 2 })
    expect(host.sessionCount).toBe(0)
    const logs = linesOfType(readJournal(join(resumed.executionDir, 'journal.jsonl')).lines, 'log')
    expect(logs).toEqual([expect.objectContaining({ level: 'warn', message: `took over the run's ownership lock from process ${pid} (execution stale), which is no longer running` })])
    expect(lockLeftovers(runsDir, 'stale')).toEqual([])
  })

  it.skipIf(!existsSync('/proc/self/stat'))('takes a pid that now belongs to another process (a different start time) for a dead owner', async () => {
    const runsDir = tempRunsDir()
    await runWorkflowScript(twoCalls, { runsDir, runId: 'reused', host: answering() })
    // This very process is alive, but it is not the process that wrote the lock.
    writeLock(runsDir, 'reused', { pid: process.pid, processStart: 'another-boot:12345' })
    const resumed = await resumeRun('reused', twoCalls, { runsDir, host: answering() })
    expect(resumed.disposition).toBe('completed')
    expect(lockLeftovers(runsDir, 'reused')).toEqual([])
  })

  it('never takes over a lock held on another host: RUN_OWNED, naming the lock file to delete', async () => {
    const runsDir = tempRunsDir()
    await runWorkflowScript(twoCalls, { runsDir, runId: 'remote', host: answering() })
    writeLock(runsDir, 'remote', { hostname: `not-${hostname()}`, pid: 4242 })
    await expect(resumeRun('remote', twoCalls, { runsDir, host: answering() })).rejects.toMatchObject({
      code: 'RUN_OWNED',
      message: expect.stringContaining(`delete ${lockPath(runsDir, 'remote')}`),
    })
    expect(existsSync(join(runsDir, 'remote', 'executions'))).toBe(false)
  })

  it('takes an unreadable lock for one being written, and for a dead writer once it is old', async () => {
    const runsDir = tempRunsDir()
    await runWorkflowScript(twoCalls, { runsDir, runId: 'torn', host: answering() })
    writeFileSync(lockPath(runsDir, 'torn'), '')
    await expect(resumeRun('torn', twoCalls, { runsDir, host: answering() })).rejects.toMatchObject({ code: 'RUN_OWNED' })
    const old = new Date(Date.now() - 60_000)
    utimesSync(lockPath(runsDir, 'torn'), old, old)
    const resumed = await resumeRun('torn', twoCalls, { runsDir, host: answering() })
    expect(resumed.disposition).toBe('completed')
    expect(lockLeftovers(runsDir, 'torn')).toEqual([])
  })

  it('passes over the take-over marker of a taker that died, and leaves no markers behind', async () => {
    const runsDir = tempRunsDir()
    await runWorkflowScript(twoCalls, { runsDir, runId: 'marked', host: answering() })
    const token = 'abcdef0123456789abcdef0123456789'
    writeLock(runsDir, 'marked', { token })
    const deadTaker = { pid: deadPid(), hostname: hostname(), runId: 'marked', executionId: 'resume-001', startedAt: 'x', processStartedAt: 'x', processStart: null, token: '0123456789abcdef' }
    writeFileSync(`${lockPath(runsDir, 'marked')}.takeover-${token}.1`, JSON.stringify(deadTaker))
    const resumed = await resumeRun('marked', twoCalls, { runsDir, host: answering() })
    expect(resumed.disposition).toBe('completed')
    expect(lockLeftovers(runsDir, 'marked')).toEqual([])
  })

  it('refuses while a live taker is taking a stale lock over', async () => {
    const runsDir = tempRunsDir()
    await runWorkflowScript(twoCalls, { runsDir, runId: 'taking', host: answering() })
    const token = 'abcdef0123456789abcdef0123456789'
    writeLock(runsDir, 'taking', { token })
    const liveTaker = JSON.parse(readFileSync(lockPath(runsDir, 'taking'), 'utf8')) as Record<string, unknown>
    // This process stands in for the live taker: its pid is alive.
    writeFileSync(`${lockPath(runsDir, 'taking')}.takeover-${token}.1`, JSON.stringify({ ...liveTaker, pid: process.pid, token: '0123456789abcdef' }))
    await expect(resumeRun('taking', twoCalls, { runsDir, host: answering() })).rejects.toMatchObject({
      code: 'RUN_OWNED',
      message: expect.stringContaining('another process is taking the run over'),
    })
  })
})
