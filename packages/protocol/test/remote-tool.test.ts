import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type AttemptRecord, createManualClock } from '@locus/retry'
import { afterEach, describe, expect, it } from 'vitest'
import { type Action, type ToolExecuteTrigger, callRemoteTool, createInProcessTransport, createStdioTransport, createWorker } from '../src/index.js'

const POLICY = { timeout_secs: 30, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 60 }
const packageDir = fileURLToPath(new URL('..', import.meta.url))
const nodeWorker = fileURLToPath(new URL('./fixtures/node-worker.ts', import.meta.url))
const pythonWorker = fileURLToPath(new URL('../../../docs/examples/python-worker/tools.py', import.meta.url))
const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function renderReport(failures: number) {
  let calls = 0
  return createWorker({
    tools: {
      render_report: ({ topic }: { topic: string }) => {
        calls += 1
        // The seed's worker answer, as written.
        if (calls <= failures) return { actions: [{ type: 'tool.error', id: `call-1`, error: 'upstream 503', retryable: true, code: 'provider_error' }] }
        return { pages: 3, topic }
      },
    },
  })
}

async function run(failures: number) {
  const clock = createManualClock(Date.parse('2026-12-03T06:00:00.000Z'))
  const triggers: ToolExecuteTrigger[] = []
  const records: AttemptRecord[] = []
  const running = callRemoteTool({
    id: 'call-1',
    name: 'render_report',
    arguments: { topic: 'q3' },
    retry: POLICY,
    transport: createInProcessTransport(renderReport(failures)),
    clock,
    onTrigger: (trigger) => triggers.push(trigger),
    onAttempt: (record) => records.push(record),
  })
  await clock.runUntilIdle()
  return { outcome: await running, triggers, records }
}

describe('a remote tool under the seed 001 policy', () => {
  it('render_report failing twice retryably: three triggers 30 s deadlines from their starts, 2 s and 4 s apart, then the result', async () => {
    const { outcome, triggers, records } = await run(2)
    expect(outcome).toMatchObject({ ok: true, value: { pages: 3, topic: 'q3' } })
    expect(triggers.map((trigger) => trigger.attempt)).toEqual([1, 2, 3])
    expect(records.map((record) => record.delayBeforeNextMs)).toEqual([2000, 4000, undefined])
    for (const [index, trigger] of triggers.entries()) {
      expect(Date.parse(trigger.deadline ?? '') - (records[index]?.startedAt ?? 0)).toBe(30_000)
    }
    expect((records[1]?.startedAt ?? 0) - (records[0]?.endedAt ?? 0)).toBe(2000)
    expect((records[2]?.startedAt ?? 0) - (records[1]?.endedAt ?? 0)).toBe(4000)
  })

  it('render_report failing three times settles terminal after the third attempt', async () => {
    const { outcome, triggers } = await run(3)
    expect(outcome).toMatchObject({ ok: false, reason: 'exhausted', failure: { error: 'upstream 503', retryable: true, code: 'provider_error' } })
    expect(triggers).toHaveLength(3)
  })

  it('a worker error without retryable is terminal whatever its code', async () => {
    for (const code of ['rate_limited', 'provider_error', 'deadline_exceeded'] as const) {
      const worker = createWorker({ tools: { busy: () => ({ actions: [{ type: 'tool.error', id: 'c', error: 'busy', code }] }) } })
      const attempts: AttemptRecord[] = []
      const outcome = await callRemoteTool({ id: 'c', name: 'busy', arguments: {}, retry: POLICY, transport: createInProcessTransport(worker), onAttempt: (record) => attempts.push(record) })
      expect(outcome).toMatchObject({ ok: false, reason: 'terminal', failure: { retryable: false } })
      expect(attempts).toHaveLength(1)
    }
  })

  it('stamps a lapsed deadline deadline_exceeded and retries it; an answer after the deadline is ignored', async () => {
    const clock = createManualClock(0)
    let calls = 0
    const worker = createWorker({
      tools: {
        slow: async () => {
          calls += 1
          if (calls === 1) await clock.sleep(60_000)
          return { attempt: calls }
        },
      },
    })
    const records: AttemptRecord[] = []
    const running = callRemoteTool({ id: 's', name: 'slow', arguments: {}, retry: { ...POLICY, backoff_base_secs: 0 }, transport: createInProcessTransport(worker), clock, onAttempt: (record) => records.push(record) })
    await clock.runUntilIdle()
    expect(await running).toMatchObject({ ok: true, value: { attempt: 2 } })
    expect(records[0]).toMatchObject({ outcome: 'timed-out', failure: { code: 'deadline_exceeded', retryable: true } })
  })
})

describe('the stdio transport', () => {
  function transport() {
    const dir = mkdtempSync(join(tmpdir(), 'locus-worker-'))
    dirs.push(dir)
    return createStdioTransport({ command: process.execPath, args: ['--conditions=@locus/source', '--import', 'tsx', nodeWorker], cwd: packageDir, env: { DIE_MARKER: join(dir, 'died') } })
  }

  it('fails the open call of a worker that died as retryable provider_error, and starts it again for the next attempt', async () => {
    const stdio = transport()
    try {
      const records: AttemptRecord[] = []
      const outcome = await callRemoteTool({ id: 'd', name: 'die_once', arguments: {}, retry: { ...POLICY, backoff_base_secs: 0 }, transport: stdio, onAttempt: (record) => records.push(record) })
      expect(outcome).toMatchObject({ ok: true, value: { survived: true } })
      expect(records[0]).toMatchObject({ outcome: 'failed', failure: { retryable: true, code: 'provider_error' } })
      expect(records[0]?.failure?.error).toMatch(/exited with code 3/)
    } finally {
      await stdio.close()
    }
  }, 30_000)

  it('gives each attempt a trigger id of its own: a late answer to attempt 1 goes to its onLateAnswer, never to attempt 2', async () => {
    const stdio = transport()
    try {
      const trigger = (attempt: number): ToolExecuteTrigger => ({ type: 'tool.execute', id: 'h', attempt, deadline: null, name: 'hold_first', arguments: {} })
      const abandon = new AbortController()
      const late: Action[][] = []
      const first = stdio.send(trigger(1), { signal: abandon.signal, onLateAnswer: (actions) => late.push(actions) })
      abandon.abort()
      await expect(first).rejects.toMatchObject({ name: 'TransportError', retryable: false })
      expect(await stdio.send(trigger(2))).toEqual([{ type: 'tool.result', id: 'h', result: { attempt: 2 } }])
      expect(late).toEqual([[{ type: 'tool.result', id: 'h', result: { attempt: 1 } }]])
    } finally {
      await stdio.close()
    }
  }, 30_000)

  it('callRemoteTool takes attempt 2’s answer when attempt 1 answers after its deadline, and reports the late one', async () => {
    const stdio = transport()
    try {
      // Started and answering first, so only attempt 1's deadline is in play, not the worker's start-up.
      expect(await callRemoteTool({ id: 'warm', name: 'echo', arguments: {}, transport: stdio })).toMatchObject({ ok: true })
      const late: { attempt: number; actions: Action[] }[] = []
      const outcome = await callRemoteTool({
        id: 'h',
        name: 'hold_first',
        arguments: {},
        retry: { timeout_secs: 1, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 },
        transport: stdio,
        onLateAnswer: (answer) => late.push(answer),
      })
      expect(outcome).toMatchObject({ ok: true, value: { attempt: 2 } })
      expect(late).toEqual([{ attempt: 1, actions: [{ type: 'tool.result', id: 'h', result: { attempt: 1 } }] }])
    } finally {
      await stdio.close()
    }
  }, 30_000)

  it('fails a call terminally, naming the parse error, when the worker answers garbage', async () => {
    const stdio = transport()
    try {
      const outcome = await callRemoteTool({ id: 'g', name: 'garbage', arguments: {}, retry: POLICY, transport: stdio })
      expect(outcome).toMatchObject({ ok: false, reason: 'terminal', failure: { retryable: false } })
      expect(outcome.ok ? '' : outcome.failure.error).toMatch(/not a valid answer \(not JSON/)
    } finally {
      await stdio.close()
    }
  }, 30_000)

  let hasPython = true
  try {
    execFileSync('python3', ['--version'])
  } catch {
    hasPython = false
  }
  it.skipIf(!hasPython)('serves tools from the Python worker example', async () => {
    const python = createStdioTransport({ command: 'python3', args: [pythonWorker] })
    try {
      const counted = await callRemoteTool({ id: 'w', name: 'word_count', arguments: { text: 'three little words' }, transport: python })
      expect(counted).toMatchObject({ ok: true, value: { words: 3 } })
      const records: AttemptRecord[] = []
      const flaky = await callRemoteTool({ id: 'f', name: 'flaky', arguments: {}, retry: { ...POLICY, backoff_base_secs: 0 }, transport: python, onAttempt: (record) => records.push(record) })
      expect(flaky).toMatchObject({ ok: false, reason: 'exhausted', failure: { error: 'upstream 503', retryable: true, code: 'provider_error' } })
      expect(records).toHaveLength(3)
    } finally {
      await python.close()
    }
  }, 30_000)
})
