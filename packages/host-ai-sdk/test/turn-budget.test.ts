// The host's turn budget (issue 19, item 3): a frozen server ends as
// host-turn-timeout at the launch mode's idle bound, not after Node's own
// 300 s headers timeout, and the runtime's `attempts` re-sends it.
import { join } from 'node:path'
import { createManualClock } from '@locus/retry'
import { defineTool, runWorkflowScript } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type AiSdkSessionRequest, TURN_BUDGET_DEFAULTS, createAiSdkHost, resolveTurnBudget } from '../src/index.js'
import { readJsonLines, sessionRequest, startServer, tempDir, turnSignal } from './helpers.js'

/** Settles `promise` into a flag the test can read without awaiting it. */
function track<T>(promise: Promise<T>): { readonly settled: () => boolean; readonly value: Promise<T> } {
  let settled = false
  const value = promise.finally(() => {
    settled = true
  })
  return { settled: () => settled, value }
}

describe('the default turn budget of each launch mode', () => {
  it('interactive: a frozen server with no retry policy ends at the 120 s idle bound as host-turn-timeout', async () => {
    const clock = createManualClock()
    const server = await startServer({ replies: [{ kind: 'hang' }] })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', clock }).openSession(sessionRequest())
    const turn = track(session.prompt('hi', turnSignal()))
    await server.waitForRequests(1)
    await clock.advance(TURN_BUDGET_DEFAULTS.interactive.idleMs! - 1)
    expect(turn.settled()).toBe(false)
    await clock.advance(1)
    const closed = await server.waitForClientClose()
    expect(closed).toBe(server.requests[0])
    const result = await turn.value
    expect(result).toMatchObject({ text: '', stopReason: 'aborted', failureCause: 'host-turn-timeout' })
    expect(result.reason).toContain('120000 ms passed without a byte from the server')
    expect(result.reason).not.toMatch(/Headers Timeout/)
    expect(result.llmAttempts).toEqual([expect.objectContaining({ attempt: 1, outcome: 'timed-out', code: 'deadline_exceeded', turnBudget: 'idle', retryable: false })])
  })

  it('background (from the session request): the idle bound is 240 s', async () => {
    const clock = createManualClock()
    const server = await startServer({ replies: [{ kind: 'hang' }] })
    const request: AiSdkSessionRequest = { ...sessionRequest(), launchMode: 'background' }
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', clock }).openSession(request)
    const turn = track(session.prompt('hi', turnSignal()))
    await server.waitForRequests(1)
    await clock.advance(239_999)
    expect(turn.settled()).toBe(false)
    await clock.advance(1)
    expect(await turn.value).toMatchObject({ failureCause: 'host-turn-timeout' })
  })

  it('the host option launchMode selects the default when the request names none', () => {
    expect(resolveTurnBudget({ launchMode: 'background' }, { budgets: {} })).toMatchObject({ ...TURN_BUDGET_DEFAULTS.background, launchMode: 'background' })
    expect(resolveTurnBudget({}, { budgets: {} })).toMatchObject({ ...TURN_BUDGET_DEFAULTS.interactive, launchMode: 'interactive' })
    // Both idle bounds stay under Node's 300 s headers and body timeouts.
    for (const budget of Object.values(TURN_BUDGET_DEFAULTS)) expect(budget.idleMs).toBeLessThan(300_000)
  })

  it('precedence, bound by bound: the call, then agents[role], then the host, then the launch mode', () => {
    const budget = resolveTurnBudget(
      { host: { totalMs: 50_000, idleMs: 5_000 }, agent: { idleMs: 7_000 }, launchMode: 'interactive' },
      { budgets: { turnTimeoutMs: 9_000 }, launchMode: 'background' },
    )
    expect(budget).toEqual({ launchMode: 'background', totalMs: 9_000, idleMs: 7_000, sources: { totalMs: 'call', idleMs: 'host-agent' } })
    expect(resolveTurnBudget({ host: { idleMs: null } }, { budgets: {} })).toMatchObject({ idleMs: null, totalMs: 900_000, sources: { idleMs: 'host', totalMs: 'launch-mode' } })
  })
})

describe('overriding the turn budget', () => {
  it('the total bound ends a turn that takes too long, even while bytes keep coming', async () => {
    const server = await startServer({ replies: [{ kind: 'drip', pieces: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'], intervalMs: 40 }] })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', turnBudget: { totalMs: 150, idleMs: 1_000 } }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result).toMatchObject({ failureCause: 'host-turn-timeout', stopReason: 'aborted' })
    expect(result.reason).toContain('longer than 150 ms (its total bound)')
    expect(result.llmAttempts[0]).toMatchObject({ turnBudget: 'total', outcome: 'timed-out' })
  })

  it('the idle bound is reset by every streamed chunk: a slow but steady stream finishes', async () => {
    const server = await startServer({ replies: [{ kind: 'drip', pieces: ['one ', 'two ', 'three ', 'four ', 'five ', 'six'], intervalMs: 40 }] })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', turnBudget: { idleMs: 200 } }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result).toMatchObject({ text: 'one two three four five six', stopReason: 'end' })
  })

  it('a stream that goes quiet for longer than the idle bound ends as host-turn-timeout', async () => {
    const server = await startServer({ replies: [{ kind: 'drip', pieces: ['one ', 'two'], intervalMs: 400 }] })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', turnBudget: { idleMs: 120 } }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result).toMatchObject({ failureCause: 'host-turn-timeout' })
    expect(result.reason).toContain('120 ms passed without a byte')
  })

  it('a call sets its own bounds through budgets.turnIdleMs / turnTimeoutMs, over the host option', async () => {
    const clock = createManualClock()
    const server = await startServer({ replies: [{ kind: 'hang' }] })
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', clock, turnBudget: { idleMs: 60_000 } })
    const base = sessionRequest()
    const session = await host.openSession({ ...base, budgets: { ...base.budgets, turnIdleMs: 2_000 } })
    const turn = track(session.prompt('hi', turnSignal()))
    await server.waitForRequests(1)
    await clock.advance(2_000)
    expect(await turn.value).toMatchObject({ failureCause: 'host-turn-timeout' })
  })

  it('agents[role].turnBudget applies to that role only', async () => {
    const clock = createManualClock()
    const server = await startServer({ replies: [{ kind: 'hang' }] })
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', clock, agents: { scout: { turnBudget: { idleMs: 1_000 } } } })
    const session = await host.openSession(sessionRequest({ agent: 'scout' }))
    const turn = track(session.prompt('hi', turnSignal()))
    await server.waitForRequests(1)
    await clock.advance(1_000)
    expect(await turn.value).toMatchObject({ failureCause: 'host-turn-timeout' })
  })

  it('the total bound also ends a turn stuck in a tool call, and the tool is handed the abort', async () => {
    const server = await startServer({ replies: [{ kind: 'tool-calls', calls: [{ name: 'slow', args: {} }] }] })
    let toolSignal: AbortSignal | undefined
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', turnBudget: { totalMs: 150 } }).openSession(
      sessionRequest({
        tools: [
          {
            name: 'slow',
            input: z.object({}),
            invoke: (_args, signal) => {
              toolSignal = signal
              return new Promise(() => undefined)
            },
          },
        ],
      }),
    )
    const result = await session.prompt('hi', turnSignal())
    expect(result).toMatchObject({ failureCause: 'host-turn-timeout' })
    expect(toolSignal?.aborted).toBe(true)
  })

  it('a caller abort is still a plain abort, not a turn-budget timeout', async () => {
    const server = await startServer({ replies: [{ kind: 'hang' }] })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' }).openSession(sessionRequest())
    const { signal, abort } = turnSignal()
    const turn = session.prompt('hi', { signal })
    await server.waitForRequests(1)
    abort()
    const result = await turn
    expect(result).toMatchObject({ stopReason: 'aborted' })
    expect(result.failureCause).toBeUndefined()
  })

  it('refuses a turn budget that is not a positive number or null, naming the field', () => {
    expect(() => createAiSdkHost({ baseURL: 'http://x/v1', modelId: 'm', turnBudget: { idleMs: 0 } })).toThrow(/turnBudget\.idleMs/)
    expect(() => createAiSdkHost({ baseURL: 'http://x/v1', modelId: 'm', launchMode: 'nightly' as never })).toThrow(/launchMode must be one of interactive, background/)
  })
})

describe('through the runtime', () => {
  it('host-turn-timeout is retried under attempts, and the retry answers', async () => {
    const server = await startServer({ replies: [{ kind: 'hang' }, { kind: 'text', text: 'second child answered' }] })
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', turnBudget: { idleMs: 150 } })
    const run = await runWorkflowScript(
      async ({ agent }) => {
        const { answer } = await agent('hi', { attempts: 2 })
        return { ok: true, answer }
      },
      { host, runsDir: tempDir() },
    )
    expect(run.disposition).toBe('completed')
    expect(run.result).toEqual({ ok: true, answer: 'second child answered' })
    const ends = readJsonLines(join(run.runDir, 'journal.jsonl')).filter((line) => line.type === 'agent_end')
    expect(ends.map((line) => [line.attempt, line.status, line.failureCause ?? null])).toEqual([
      [1, 'failed', 'host-turn-timeout'],
      [2, 'completed', null],
    ])
  })

  it('without attempts, a frozen server fails the call as host-turn-timeout, with the tool surface intact', async () => {
    const server = await startServer({ replies: [{ kind: 'hang' }] })
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', turnBudget: { idleMs: 100 } })
    const run = await runWorkflowScript(
      {
        name: 'frozen',
        tools: { noop: defineTool({ input: z.object({}), run: () => 'ok' }) },
        async run({ agent }) {
          return agent('hi')
        },
      },
      { host, runsDir: tempDir() },
    )
    expect(run.disposition).toBe('failed')
    const end = readJsonLines(join(run.runDir, 'journal.jsonl')).find((line) => line.type === 'agent_end')
    expect(end).toMatchObject({ status: 'failed', failureCause: 'host-turn-timeout' })
  })
})
