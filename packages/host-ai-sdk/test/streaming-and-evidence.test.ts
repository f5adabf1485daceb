// Streaming (issue 19, item 4), the evidence of every LLM attempt on the turn
// result (item 5), the output-token cap and tool refusals (item 7) and the
// wording of a call that had no retry policy (item 8).
import { createManualClock } from '@locus/retry'
import type { HostTool } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type LlmAttempt, type LlmProgress, aiSdkHostOptionsFromSettings, createAiSdkHost } from '../src/index.js'
import { sessionRequest, startServer, turnSignal } from './helpers.js'

const retry = { timeout_secs: null, max_retries: 3, backoff_base_secs: 0, backoff_max_secs: 0 }
const echoTool: HostTool = { name: 'echo', description: 'Echoes its input.', input: z.object({ text: z.string() }), invoke: (args) => Promise.resolve(args) }

describe('streaming', () => {
  it('asks for a stream with usage, and joins the streamed answer', async () => {
    const server = await startServer({ replies: [{ kind: 'text', text: 'a streamed answer', usage: { promptTokens: 7, completionTokens: 3 } }] })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result).toMatchObject({ text: 'a streamed answer', stopReason: 'end', usage: { inputTokens: 7, outputTokens: 3 } })
    expect(server.requests[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } })
  })

  it('streaming: false waits for the whole completion instead', async () => {
    const server = await startServer({ replies: [{ kind: 'text', text: 'whole' }] })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', streaming: false }).openSession(sessionRequest())
    expect(await session.prompt('hi', turnSignal())).toMatchObject({ text: 'whole' })
    expect(server.requests[0]!.body.stream).toBeUndefined()
  })

  it('progress: the first token at once, then throttled token counts, then the step end, to the host and to the prompt', async () => {
    const pieces = Array.from({ length: 12 }, (_, index) => `w${index} `)
    const server = await startServer({ replies: [{ kind: 'drip', pieces, intervalMs: 15, usage: { promptTokens: 4, completionTokens: 12 } }] })
    const fromHost: LlmProgress[] = []
    const fromPrompt: LlmProgress[] = []
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', progressIntervalMs: 40, onProgress: (progress) => fromHost.push(progress) })
    const session = await host.openSession(sessionRequest())
    const result = await session.prompt('hi', { ...turnSignal(), onProgress: (progress) => fromPrompt.push(progress) })
    expect(result.text).toBe(pieces.join(''))
    expect(fromPrompt).toEqual(fromHost)
    expect(fromHost[0]).toMatchObject({ kind: 'first-token', outputTokens: 1, callId: 'call-1-a1', turn: 1, step: 1, attempt: 1 })
    expect(fromHost[0]!.timeToFirstTokenMs).toBeGreaterThanOrEqual(0)
    expect(fromHost.at(-1)).toMatchObject({ kind: 'step-end', outputTokens: 12, textChars: pieces.join('').length })
    // Throttled: far fewer events than chunks, and counts that never go down.
    const middle = fromHost.filter((progress) => progress.kind === 'tokens')
    expect(middle.length).toBeLessThan(pieces.length - 2)
    const counts = fromHost.map((progress) => progress.outputTokens)
    expect([...counts].sort((left, right) => left - right)).toEqual(counts)
  })

  it('a streamed tool round trip still works, and its progress spans both steps', async () => {
    const server = await startServer({
      replies: [{ kind: 'tool-calls', calls: [{ name: 'echo', args: { text: 'x' } }], usage: { promptTokens: 1, completionTokens: 5 } }, { kind: 'text', text: 'done' }],
    })
    const progress: LlmProgress[] = []
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', onProgress: (event) => progress.push(event) }).openSession(sessionRequest({ tools: [echoTool] }))
    const result = await session.prompt('use the tool', turnSignal())
    expect(result).toMatchObject({ text: 'done', stopReason: 'end' })
    expect(progress.filter((event) => event.kind === 'step-end').map((event) => [event.step, event.outputTokens])).toEqual([
      [1, 5],
      [2, 10],
    ])
  })

  it.each([true, false])('records the usage the provider reported for each request of a tool round trip (streamed: %s)', async (streaming) => {
    const server = await startServer({
      replies: [
        { kind: 'tool-calls', calls: [{ name: 'echo', args: { text: 'x' } }], usage: { promptTokens: 11, completionTokens: 5 } },
        { kind: 'text', text: 'done', usage: { promptTokens: 30, completionTokens: 2 } },
      ],
    })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', streaming }).openSession(sessionRequest({ tools: [echoTool] }))
    const result = await session.prompt('use the tool', turnSignal())
    expect(result).toMatchObject({ text: 'done', usage: { inputTokens: 41, outputTokens: 7 } })
    expect(result.llmAttempts.map((attempt) => [attempt.step, attempt.outcome, attempt.usage])).toEqual([
      [1, 'succeeded', { inputTokens: 11, outputTokens: 5 }],
      [2, 'succeeded', { inputTokens: 30, outputTokens: 2 }],
    ])
  })

  it('puts no usage on a failed request', async () => {
    const server = await startServer({ replies: [{ kind: 'status', status: 503 }, { kind: 'text', text: 'ok', usage: { promptTokens: 3, completionTokens: 1 } }] })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', retry }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result.llmAttempts.map((attempt) => [attempt.outcome, attempt.usage ?? null])).toEqual([
      ['failed', null],
      ['succeeded', { inputTokens: 3, outputTokens: 1 }],
    ])
  })

  it('an error object inside a 200 stream is classified from its type: a rate limit is retried', async () => {
    const server = await startServer({
      replies: [{ kind: 'stream-error', error: { message: 'Rate limit reached for requests', type: 'rate_limit_error', code: 'rate_limit_exceeded' } }, { kind: 'text', text: 'ok now' }],
    })
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', retry }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result).toMatchObject({ text: 'ok now' })
    expect(result.llmAttempts.map((attempt) => [attempt.outcome, attempt.code ?? null])).toEqual([
      ['failed', 'rate_limited'],
      ['succeeded', null],
    ])
    expect(result.llmAttempts[0]!.error).toContain('inside the stream (rate_limit_error, rate_limit_exceeded)')
  })
})

describe('every LLM attempt is on the turn result', () => {
  it('number, outcome, code, status, delay and duration of each attempt, retries included', async () => {
    const clock = createManualClock()
    const server = await startServer({ now: clock.now, replies: [{ kind: 'status', status: 503 }, { kind: 'status', status: 429, headers: { 'retry-after': '3' } }, { kind: 'text', text: 'third' }] })
    const seen: LlmAttempt[] = []
    const host = createAiSdkHost({
      baseURL: server.baseURL,
      modelId: 'm',
      clock,
      retry: { timeout_secs: null, max_retries: 3, backoff_base_secs: 1, backoff_max_secs: 10 },
      onLlmAttempt: (attempt) => seen.push(attempt),
    })
    const session = await host.openSession(sessionRequest())
    const turn = session.prompt('hi', turnSignal())
    await server.waitForRequests(1)
    for (let round = 0; round < 20 && server.requests.length < 3; round += 1) await clock.advance(1_000)
    const result = await turn
    expect(result.text).toBe('third')
    expect(result.llmAttempts).toEqual(seen)
    expect(result.llmAttempts.map((attempt) => [attempt.attempt, attempt.outcome, attempt.code ?? null, attempt.status ?? null, attempt.delayBeforeNextMs ?? null])).toEqual([
      [1, 'failed', 'provider_error', 503, 1_000],
      [2, 'failed', 'rate_limited', 429, 3_000],
      [3, 'succeeded', null, null, null],
    ])
    for (const attempt of result.llmAttempts) {
      expect(attempt.durationMs).toBe(attempt.endedAt - attempt.startedAt)
      expect(attempt.streamed).toBe(true)
    }
    expect(result.llmAttempts[2]!.timeToFirstTokenMs).toBeGreaterThanOrEqual(0)
  })

  it('a turn without trouble carries its one attempt', async () => {
    const server = await startServer()
    const result = await (await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' }).openSession(sessionRequest())).prompt('hi', turnSignal())
    expect(result.llmAttempts).toEqual([expect.objectContaining({ attempt: 1, maxAttempts: 1, outcome: 'succeeded', turn: 1, step: 1 })])
  })
})

describe('the output-token cap', () => {
  it('max_tokens is the remaining budget capped at the host maxOutputTokens; null sends none', async () => {
    const server = await startServer()
    const budget = sessionRequest({ budgets: { maxOutputTokens: 8_000 } })
    await (await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' }).openSession(budget)).prompt('hi', turnSignal())
    await (await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', maxOutputTokens: 2_048 }).openSession(budget)).prompt('hi', turnSignal())
    await (await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', maxOutputTokens: null }).openSession(budget)).prompt('hi', turnSignal())
    await (await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', maxOutputTokens: 2_048, agents: { small: { maxOutputTokens: 512 } } }).openSession(sessionRequest({ agent: 'small' }))).prompt(
      'hi',
      turnSignal(),
    )
    expect(server.requests.map((request) => request.body.max_tokens ?? null)).toEqual([8_000, 2_048, null, 512])
  })

  it('a 400 that complains about max_tokens names --max-output-tokens and the host option', async () => {
    const server = await startServer({
      replies: [{ kind: 'status', status: 400, message: "max_tokens is too large: 8000. This model supports at most 4096 completion tokens, whereas you provided 8000." }],
    })
    const result = await (await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' }).openSession(sessionRequest())).prompt('hi', turnSignal())
    expect(result).toMatchObject({ stopReason: 'error', failureCause: 'provider-error' })
    expect(result.reason).toContain('HTTP 400 provider_error, terminal, not retried')
    expect(result.reason).toContain('max_tokens 8000')
    expect(result.reason).toContain('--max-output-tokens')
    expect(result.reason).toContain('maxOutputTokens')
  })

  it('a 400 about tools names the setting that turns them off, and tools: false sends none', async () => {
    const server = await startServer({ replies: [{ kind: 'status', status: 400, message: 'registry.ollama.ai/library/gemma:2b does not support tools' }] })
    const request = sessionRequest({ tools: [echoTool] })
    const refused = await (await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' }).openSession(request)).prompt('hi', turnSignal())
    expect(refused.reason).toContain("offered the workflow's 1 tool")
    expect(refused.reason).toContain('tools: false')
    const withoutTools = await (await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', tools: false }).openSession(request)).prompt('hi', turnSignal())
    expect(withoutTools).toMatchObject({ text: 'ok', stopReason: 'end' })
    expect(server.requests[1]!.body.tools).toBeUndefined()
  })
})

describe('wording of a call with no retry policy', () => {
  it('says no retry policy applied, not "retries exhausted"', async () => {
    const server = await startServer({ replies: [{ kind: 'status', status: 503, message: 'overloaded' }] })
    const result = await (await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' }).openSession(sessionRequest())).prompt('hi', turnSignal())
    expect(result.reason).toContain('HTTP 503 provider_error, after 1 LLM attempt: no retry policy applies to this call')
    expect(result.reason).not.toContain('retries exhausted')
  })
})

describe('recorded host settings', () => {
  it('are JSON-safe, never hold the API key or headers, and rebuild the same options', () => {
    const host = createAiSdkHost({
      baseURL: 'http://127.0.0.1:9/v1',
      modelId: 'llama3.2',
      apiKey: 'sk-secret',
      headers: { authorization: 'Bearer sk-other' },
      retry,
      agents: { analyst: { model: 'qwen', turnBudget: { idleMs: 5_000 }, tools: false } },
      turnBudget: { totalMs: 60_000 },
      launchMode: 'background',
      maxOutputTokens: 4_096,
    })
    const recorded = JSON.parse(JSON.stringify(host.settings)) as unknown
    expect(JSON.stringify(recorded)).not.toContain('secret')
    expect(JSON.stringify(recorded)).not.toContain('sk-other')
    expect(recorded).toMatchObject({ host: 'ai-sdk', api: 'openai-compatible', baseURL: 'http://127.0.0.1:9/v1', modelId: 'llama3.2', apiKey: 'given', customModel: false })
    const options = aiSdkHostOptionsFromSettings(recorded, { apiKey: 'sk-from-env' })
    expect(options).toMatchObject({ baseURL: 'http://127.0.0.1:9/v1', modelId: 'llama3.2', apiKey: 'sk-from-env', retry, turnBudget: { totalMs: 60_000 }, launchMode: 'background', maxOutputTokens: 4_096 })
    expect(createAiSdkHost({ ...options, modelId: 'flag-wins' }).settings).toMatchObject({ ...host.settings, modelId: 'flag-wins', apiKey: 'given' })
  })

  it('refuses a record that is not an AI SDK host, naming the field', () => {
    expect(() => aiSdkHostOptionsFromSettings({ host: 'scripted' })).toThrow(/recorded host settings host/)
  })
})
