import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createManualClock } from '@locus/retry'
import { HostError, runWorkflowScript } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { type LlmAttempt, createAiSdkHost } from '../src/index.js'
import { parseJsonLines, readJsonLines, sessionRequest, startServer, tempDir, turnSignal, waitUntil } from './helpers.js'

const policy = (overrides: Partial<{ timeout_secs: number | null; max_retries: number; backoff_base_secs: number; backoff_max_secs: number }> = {}) => ({
  timeout_secs: null,
  max_retries: 3,
  backoff_base_secs: 2,
  backoff_max_secs: 60,
  ...overrides,
})

// Tests that read the manual clock's exact pending sleeps turn the turn budget off, so only the backoff is sleeping.
const noTurnBudget = { totalMs: null, idleMs: null }

describe('stop reasons', () => {
  it('stopReason=length ends as provider-error with the transcript kept, through the real runtime', async () => {
    const server = await startServer({ replies: [{ kind: 'text', text: 'The answer is incompl', finishReason: 'length' }] })
    const run = await runWorkflowScript(
      async ({ agent }) => {
        const { answer } = await agent('Explain everything')
        return { ok: true, answer }
      },
      { host: createAiSdkHost({ baseURL: server.baseURL, modelId: 'test-model' }), runsDir: tempDir() },
    )
    expect(run.disposition).toBe('failed')
    const end = readJsonLines(join(run.runDir, 'journal.jsonl')).find((line) => line.type === 'agent_end')!
    expect(end).toMatchObject({ status: 'failed', failureCause: 'provider-error', stopReason: 'length', usage: { inputTokens: 10, outputTokens: 5 } })
    const transcript = JSON.parse(readFileSync(join(run.runDir, 'calls', String(end.callId), 'transcript', 'transcript.json'), 'utf8')) as unknown[]
    expect(transcript).toContainEqual({ role: 'assistant', content: 'The answer is incompl', stopReason: 'length' })
    expect(JSON.stringify(run.result)).not.toContain('incompl')
  })

  it('a content filter stop is a provider-error turn', async () => {
    const server = await startServer({ replies: [{ kind: 'text', text: '', finishReason: 'content_filter' }] })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' }).openSession(sessionRequest())
    const result = await session.prompt('x', turnSignal())
    expect(result).toMatchObject({ stopReason: 'content-filter', failureCause: 'provider-error' })
    expect(result.reason).toContain('content filter')
  })

  it('an output-token budget already spent ends the turn as length before any request', async () => {
    const server = await startServer({ replies: [{ kind: 'text', text: 'a', usage: { promptTokens: 1, completionTokens: 50 } }] })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' }).openSession(sessionRequest({ budgets: { maxOutputTokens: 50 } }))
    expect(await session.prompt('first', turnSignal())).toMatchObject({ stopReason: 'end' })
    expect(server.requests[0]!.body.max_tokens).toBe(50)
    expect(await session.prompt('second', turnSignal())).toMatchObject({ stopReason: 'length' })
    expect(server.requests).toHaveLength(1)
  })
})

describe('HTTP failures under the retry policy', () => {
  it('429 then success retries once, after at least the Retry-After delay (not the shorter backoff)', async () => {
    const clock = createManualClock()
    const server = await startServer({
      now: clock.now,
      replies: [{ kind: 'status', status: 429, message: 'slow down', headers: { 'retry-after': '7' } }, { kind: 'text', text: 'hello' }],
    })
    const attempts: LlmAttempt[] = []
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', clock, retry: policy(), turnBudget: noTurnBudget, onLlmAttempt: (attempt) => attempts.push(attempt) })
    const session = await host.openSession(sessionRequest())
    const turn = session.prompt('hi', turnSignal())
    await waitUntil(() => clock.pendingSleeps().length > 0, 'the backoff sleep')
    expect(clock.pendingSleeps()).toEqual([{ wakeAt: 7000, ms: 7000 }])
    await clock.advance(6999)
    expect(server.requests).toHaveLength(1)
    await clock.advance(1)
    const result = await turn
    expect(result).toMatchObject({ text: 'hello', stopReason: 'end' })
    expect(server.requests).toHaveLength(2)
    expect(server.requests[1]!.receivedAt).toBeGreaterThanOrEqual(7000)
    expect(attempts.map((attempt) => [attempt.attempt, attempt.outcome, attempt.code, attempt.status])).toEqual([
      [1, 'failed', 'rate_limited', 429],
      [2, 'succeeded', undefined, undefined],
    ])
    expect(attempts[0]).toMatchObject({ retryable: true, retryAfterMs: 7000, delayBeforeNextMs: 7000 })
  })

  it('a Retry-After shorter than the backoff keeps the backoff', async () => {
    const clock = createManualClock()
    const server = await startServer({ replies: [{ kind: 'status', status: 429, headers: { 'retry-after': '1' } }, { kind: 'text', text: 'ok' }] })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', clock, retry: policy({ backoff_base_secs: 5 }), turnBudget: noTurnBudget }).openSession(sessionRequest())
    const turn = session.prompt('hi', turnSignal())
    await waitUntil(() => clock.pendingSleeps().length > 0, 'the backoff sleep')
    expect(clock.pendingSleeps()).toEqual([{ wakeAt: 5000, ms: 5000 }])
    await clock.advance(5000)
    expect(await turn).toMatchObject({ text: 'ok' })
  })

  it('with a zero backoff, the next attempt still waits out Retry-After before sending', async () => {
    const clock = createManualClock()
    const server = await startServer({ now: clock.now, replies: [{ kind: 'status', status: 429, headers: { 'retry-after-ms': '2500' } }, { kind: 'text', text: 'ok' }] })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', clock, retry: policy({ backoff_base_secs: 0 }), turnBudget: noTurnBudget }).openSession(sessionRequest())
    const turn = session.prompt('hi', turnSignal())
    await waitUntil(() => clock.pendingSleeps().length > 0, 'the Retry-After wait')
    expect(clock.pendingSleeps()).toEqual([{ wakeAt: 2500, ms: 2500 }])
    await clock.advance(2500)
    expect(await turn).toMatchObject({ text: 'ok' })
    expect(server.requests[1]!.receivedAt).toBe(2500)
  })

  it('503 then success retries after the policy backoff', async () => {
    const clock = createManualClock()
    const server = await startServer({ now: clock.now, replies: [{ kind: 'status', status: 503, message: 'overloaded' }, { kind: 'text', text: 'back' }] })
    const attempts: LlmAttempt[] = []
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', clock, retry: policy(), turnBudget: noTurnBudget, onLlmAttempt: (attempt) => attempts.push(attempt) }).openSession(sessionRequest())
    const turn = session.prompt('hi', turnSignal())
    await waitUntil(() => clock.pendingSleeps().length > 0, 'the backoff sleep')
    expect(clock.pendingSleeps()).toEqual([{ wakeAt: 2000, ms: 2000 }])
    await clock.advance(2000)
    expect(await turn).toMatchObject({ text: 'back', stopReason: 'end' })
    expect(server.requests[1]!.receivedAt).toBe(2000)
    expect(attempts[0]).toMatchObject({ outcome: 'failed', code: 'provider_error', status: 503, retryable: true, delayBeforeNextMs: 2000 })
  })

  it('400 is not retried and ends the turn as provider-error naming the status and code', async () => {
    const server = await startServer({ replies: [{ kind: 'status', status: 400, message: 'bad request: unknown field' }], fallback: { kind: 'text', text: 'never' } })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', retry: policy({ backoff_base_secs: 0 }) }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(server.requests).toHaveLength(1)
    expect(result).toMatchObject({ text: '', stopReason: 'error', failureCause: 'provider-error' })
    expect(result.reason).toContain('HTTP 400 provider_error')
    expect(result.reason).toContain('not retried')
  })

  it('401 is refused and terminal', async () => {
    const server = await startServer({ replies: [{ kind: 'status', status: 401, message: 'invalid api key' }], fallback: { kind: 'text', text: 'never' } })
    const attempts: LlmAttempt[] = []
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', apiKey: 'sk-wrong', retry: policy({ backoff_base_secs: 0 }), onLlmAttempt: (attempt) => attempts.push(attempt) })
    const result = await (await host.openSession(sessionRequest())).prompt('hi', turnSignal())
    expect(server.requests).toHaveLength(1)
    expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-wrong')
    expect(result).toMatchObject({ stopReason: 'error', failureCause: 'provider-error' })
    expect(result.reason).toContain('HTTP 401 refused')
    expect(attempts).toEqual([expect.objectContaining({ code: 'refused', retryable: false, status: 401 })])
  })

  it('503 on every attempt exhausts max_retries and says so', async () => {
    const server = await startServer({ fallback: { kind: 'status', status: 503 } })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', retry: policy({ backoff_base_secs: 0 }) }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(server.requests).toHaveLength(3)
    expect(result.reason).toContain('HTTP 503 provider_error, after 3 LLM attempts (retries exhausted: the retry policy allows 3 attempts)')
  })

  it('a hang hits the per-attempt timeout (deadline_exceeded), the request is cancelled, and the retry answers', async () => {
    const clock = createManualClock()
    const server = await startServer({ now: clock.now, replies: [{ kind: 'hang' }, { kind: 'text', text: 'second time lucky' }] })
    const attempts: LlmAttempt[] = []
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', clock, retry: policy({ timeout_secs: 30 }), onLlmAttempt: (attempt) => attempts.push(attempt) })
    const session = await host.openSession(sessionRequest())
    const turn = session.prompt('hi', turnSignal())
    await server.waitForRequests(1)
    await clock.advance(30_000)
    const closed = await server.waitForClientClose()
    expect(closed).toBe(server.requests[0])
    await waitUntil(() => clock.pendingSleeps().some((sleep) => sleep.ms === 2000), 'the backoff sleep')
    await clock.advance(2000)
    expect(await turn).toMatchObject({ text: 'second time lucky', stopReason: 'end' })
    expect(attempts[0]).toMatchObject({ attempt: 1, outcome: 'timed-out', code: 'deadline_exceeded', retryable: true, delayBeforeNextMs: 2000 })
    expect(attempts[1]).toMatchObject({ attempt: 2, outcome: 'succeeded' })
  })

  it('a reset connection is provider_error and retried', async () => {
    const server = await startServer({ replies: [{ kind: 'reset' }, { kind: 'text', text: 'fine' }] })
    const attempts: LlmAttempt[] = []
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', retry: policy({ backoff_base_secs: 0 }), onLlmAttempt: (attempt) => attempts.push(attempt) }).openSession(sessionRequest())
    expect(await session.prompt('hi', turnSignal())).toMatchObject({ text: 'fine' })
    expect(attempts[0]).toMatchObject({ outcome: 'failed', code: 'provider_error', retryable: true })
    expect(attempts[0]!.status).toBeUndefined()
  })

  it('a server that cannot be reached at all ends as provider-error after the retries, not a throw', async () => {
    const server = await startServer()
    const baseURL = server.baseURL
    await server.close()
    const session = await createAiSdkHost({ baseURL, modelId: 'm', retry: policy({ max_retries: 2, backoff_base_secs: 0 }) }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result).toMatchObject({ stopReason: 'error', failureCause: 'provider-error' })
    expect(result.reason).toContain('no HTTP status, provider_error, after 2 LLM attempts')
  })

  it('a malformed body is provider-error, not a crash', async () => {
    const server = await startServer({ replies: [{ kind: 'malformed' }] })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', retry: policy(), streaming: false }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result).toMatchObject({ text: '', stopReason: 'error', failureCause: 'provider-error' })
    expect(result.reason).toContain('HTTP 200 provider_error')
    expect(server.requests).toHaveLength(1)
  })

  it('a malformed stream is provider-error, terminal, not a crash', async () => {
    const server = await startServer({ replies: [{ kind: 'malformed' }] })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', retry: policy() }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result).toMatchObject({ text: '', stopReason: 'error', failureCause: 'provider-error' })
    expect(result.reason).toContain('terminal, not retried')
    expect(server.requests).toHaveLength(1)
  })

  it('every attempt is written to llm-attempts.jsonl in the transcript directory', async () => {
    const server = await startServer({ replies: [{ kind: 'status', status: 500 }, { kind: 'text', text: 'ok' }] })
    const request = sessionRequest()
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', retry: policy({ backoff_base_secs: 0 }) }).openSession(request)
    await session.prompt('hi', turnSignal())
    const lines = parseJsonLines(request.written.get('llm-attempts.jsonl') ?? '')
    expect(lines.map((line) => [line.attempt, line.outcome, line.status ?? null])).toEqual([[1, 'failed', 500], [2, 'succeeded', null]])
    expect(lines[0]).toMatchObject({ runId: 'run-test', callId: 'call-1-a1', model: 'm', turn: 1, step: 1, maxAttempts: 3 })
  })
})

describe('the attempt log (llm-attempts.jsonl)', () => {
  it('on-failure (the default) writes nothing for a session without trouble', async () => {
    const server = await startServer()
    const request = sessionRequest()
    await (await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' }).openSession(request)).prompt('hi', turnSignal())
    expect(request.written.has('llm-attempts.jsonl')).toBe(false)
  })

  it('on-failure writes the earlier successful attempts too once one fails', async () => {
    const server = await startServer({ replies: [{ kind: 'text', text: 'first' }, { kind: 'status', status: 400 }] })
    const request = sessionRequest()
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' }).openSession(request)
    await session.prompt('one', turnSignal())
    await session.prompt('two', turnSignal())
    const lines = parseJsonLines(request.written.get('llm-attempts.jsonl') ?? '')
    expect(lines.map((line) => [line.turn, line.outcome])).toEqual([[1, 'succeeded'], [2, 'failed']])
  })

  it('off writes nothing even after a failure, while onLlmAttempt still sees every attempt', async () => {
    const server = await startServer({ replies: [{ kind: 'status', status: 500 }, { kind: 'text', text: 'ok' }] })
    const request = sessionRequest()
    const seen: LlmAttempt[] = []
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', attemptLog: 'off', retry: policy({ backoff_base_secs: 0 }), onLlmAttempt: (attempt) => seen.push(attempt) })
    await (await host.openSession(request)).prompt('hi', turnSignal())
    expect(request.written.has('llm-attempts.jsonl')).toBe(false)
    expect(seen.map((attempt) => attempt.outcome)).toEqual(['failed', 'succeeded'])
  })
})

describe('cancellation', () => {
  it('abort cancels the HTTP request in flight: the server sees the connection close', async () => {
    const server = await startServer({ replies: [{ kind: 'hang' }] })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' }).openSession(sessionRequest())
    const { signal, abort } = turnSignal()
    const turn = session.prompt('hi', { signal })
    await server.waitForRequests(1)
    abort()
    const closed = await server.waitForClientClose()
    expect(closed.clientClosed).toBe(true)
    expect(await turn).toMatchObject({ text: '', stopReason: 'aborted' })
  })

  it('through the runtime, a call timeout aborts the request and the call fails as call-timeout', async () => {
    const clock = createManualClock()
    const server = await startServer({ replies: [{ kind: 'hang' }] })
    const running = runWorkflowScript(async ({ agent }) => agent('hi', { timeoutMs: 5000 }), { host: createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' }), runsDir: tempDir(), clock })
    await server.waitForRequests(1)
    await clock.advance(5000)
    await server.waitForClientClose()
    const run = await running
    const end = readJsonLines(join(run.runDir, 'journal.jsonl')).find((line) => line.type === 'agent_end')!
    expect(end).toMatchObject({ status: 'failed', failureCause: 'call-timeout' })
  })
})

describe('sdk-unavailable', () => {
  it('a provider that cannot produce the model throws HostError sdk-unavailable', async () => {
    const host = createAiSdkHost({ provider: () => { throw new Error('no such model: ghost') }, modelId: 'ghost' })
    const thrown = await Promise.resolve(host.openSession(sessionRequest())).then(() => undefined, (error: unknown) => error)
    expect(HostError.isInstance(thrown)).toBe(true)
    expect(thrown).toMatchObject({ failureCause: 'sdk-unavailable' })
    expect((thrown as Error).message).toContain('ghost')
  })

  it('through the runtime it is the terminal error line, with no agent_end', async () => {
    const host = createAiSdkHost({ provider: () => { throw new Error('provider offline') }, modelId: 'x' })
    const run = await runWorkflowScript(async ({ agent }) => agent('hi'), { host, runsDir: tempDir() })
    const lines = readJsonLines(join(run.runDir, 'journal.jsonl'))
    expect(lines.some((line) => line.type === 'agent_end')).toBe(false)
    expect(lines.find((line) => line.type === 'error')).toMatchObject({ failureCause: 'sdk-unavailable' })
  })
})
