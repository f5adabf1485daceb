// End-to-end against @dwmkerr/mock-llm, a third-party OpenAI-compatible mock
// server started on a free loopback port: its rules play 200, 400, 401, 429
// and 503, streamed answers, a frozen server (SIGSTOP) and a killed one.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { type HostTool, runWorkflowScript } from '@locus/runtime'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type LlmProgress, createAiSdkHost } from '../src/index.js'
import { readJsonLines, sessionRequest, tempDir, turnSignal } from './helpers.js'
import { type MockLlm, chatRule, completion, errorBody, startMockLlm } from './mock-llm.js'

const retry = { timeout_secs: 10, max_retries: 3, backoff_base_secs: 0, backoff_max_secs: 0 }
const lookupTool: HostTool = { name: 'lookup', input: z.object({ id: z.string() }), invoke: () => Promise.resolve('found') }

let mock: MockLlm
beforeAll(async () => {
  mock = await startMockLlm()
}, 15_000)
afterAll(async () => {
  await mock.kill()
})
beforeEach(async () => {
  await mock.configure({ rules: [chatRule(200, completion('hello from mock-llm'))] })
})

describe('mock-llm: answers', () => {
  it('200, not streamed: the answer and its usage', async () => {
    const session = await createAiSdkHost({ baseURL: mock.baseURL, modelId: 'mock-model', streaming: false }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result).toMatchObject({ text: 'hello from mock-llm', stopReason: 'end', usage: { inputTokens: 5, outputTokens: 4 } })
    expect(result.llmAttempts).toEqual([expect.objectContaining({ outcome: 'succeeded', streamed: false })])
  })

  it('200, streamed in small chunks: the answer is joined and progress arrives as it streams', async () => {
    const text = 'streamed through a third-party server, chunk by chunk'
    await mock.configure({ streaming: { chunkSize: 4, chunkIntervalMs: 5 }, rules: [chatRule(200, completion(text))] })
    const progress: LlmProgress[] = []
    const session = await createAiSdkHost({ baseURL: mock.baseURL, modelId: 'mock-model', progressIntervalMs: 0 }).openSession(sessionRequest())
    const result = await session.prompt('hi', { ...turnSignal(), onProgress: (event) => progress.push(event) })
    expect(result).toMatchObject({ text, stopReason: 'end' })
    expect(progress[0]).toMatchObject({ kind: 'first-token', outputTokens: 1 })
    expect(progress.filter((event) => event.kind === 'tokens').length).toBeGreaterThan(5)
    // mock-llm's stream reports no usage: the chunks count stands in for the output tokens.
    expect(progress.at(-1)).toMatchObject({ kind: 'step-end', outputTokens: Math.ceil(text.length / 4), textChars: text.length })
    expect(result.usage).toEqual({ inputTokens: 0, outputTokens: Math.ceil(text.length / 4) })
  })
})

describe('mock-llm: HTTP failures', () => {
  it('400 is terminal: one request, provider-error naming the status', async () => {
    await mock.configure({ rules: [chatRule(400, errorBody('Invalid request: unknown parameter', 'invalid_request_error'))] })
    const session = await createAiSdkHost({ baseURL: mock.baseURL, modelId: 'mock-model', retry, streaming: false }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result).toMatchObject({ stopReason: 'error', failureCause: 'provider-error' })
    expect(result.reason).toContain('HTTP 400 provider_error, terminal, not retried, after 1 LLM attempt')
    expect(result.llmAttempts).toHaveLength(1)
  })

  it('400 about max_tokens names --max-output-tokens; the host maxOutputTokens cap gets through', async () => {
    await mock.configure({
      rules: [
        chatRule(200, completion('fits')),
        chatRule(400, errorBody('max_tokens is too large: 8000. This model supports at most 4096 completion tokens.', 'invalid_request_error', 'invalid_value'), {
          match: 'body.max_tokens > `4096`',
        }),
      ],
    })
    const refused = await (await createAiSdkHost({ baseURL: mock.baseURL, modelId: 'mock-model', streaming: false }).openSession(sessionRequest())).prompt('hi', turnSignal())
    expect(refused.reason).toContain('--max-output-tokens')
    const capped = await (await createAiSdkHost({ baseURL: mock.baseURL, modelId: 'mock-model', streaming: false, maxOutputTokens: 4096 }).openSession(sessionRequest())).prompt(
      'hi',
      turnSignal(),
    )
    expect(capped).toMatchObject({ text: 'fits', stopReason: 'end' })
  })

  it('a server without tool support: the 400 names tools: false, which then gets through', async () => {
    await mock.configure({ rules: [chatRule(200, completion('no tools needed')), chatRule(400, errorBody('this model does not support tools', 'invalid_request_error'), { match: 'body.tools' })] })
    const request = sessionRequest({ tools: [lookupTool] })
    const refused = await (await createAiSdkHost({ baseURL: mock.baseURL, modelId: 'mock-model', streaming: false }).openSession(request)).prompt('hi', turnSignal())
    expect(refused.reason).toContain('tools: false')
    const plain = await (await createAiSdkHost({ baseURL: mock.baseURL, modelId: 'mock-model', streaming: false, tools: false }).openSession(request)).prompt('hi', turnSignal())
    expect(plain.text).toBe('no tools needed')
  })

  it('401 is refused and terminal', async () => {
    await mock.configure({ rules: [chatRule(401, errorBody('Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key'))] })
    const result = await (await createAiSdkHost({ baseURL: mock.baseURL, modelId: 'mock-model', retry, streaming: false }).openSession(sessionRequest())).prompt('hi', turnSignal())
    expect(result.reason).toContain('HTTP 401 refused, terminal, not retried')
    expect(result.llmAttempts).toEqual([expect.objectContaining({ code: 'refused', status: 401, retryable: false })])
  })

  it('429 then 200 is retried under the policy, and both attempts are evidence', async () => {
    await mock.configure({
      rules: [chatRule(429, errorBody('Rate limit reached', 'rate_limit_error', 'rate_limit_exceeded'), { sequence: 0 }), chatRule(200, completion('after the rate limit'), { sequence: 1 })],
    })
    const result = await (await createAiSdkHost({ baseURL: mock.baseURL, modelId: 'mock-model', retry, streaming: false }).openSession(sessionRequest())).prompt('hi', turnSignal())
    expect(result.text).toBe('after the rate limit')
    expect(result.llmAttempts.map((attempt) => [attempt.attempt, attempt.outcome, attempt.status ?? null, attempt.code ?? null])).toEqual([
      [1, 'failed', 429, 'rate_limited'],
      [2, 'succeeded', null, null],
    ])
  })

  it('429 on a stream arrives as an error inside a 200 stream, and is retried all the same', async () => {
    await mock.configure({
      streaming: { chunkSize: 50, chunkIntervalMs: 1 },
      rules: [chatRule(429, errorBody('Rate limit reached', 'rate_limit_error', 'rate_limit_exceeded'), { sequence: 0 }), chatRule(200, completion('streamed after the rate limit'), { sequence: 1 })],
    })
    const result = await (await createAiSdkHost({ baseURL: mock.baseURL, modelId: 'mock-model', retry }).openSession(sessionRequest())).prompt('hi', turnSignal())
    expect(result.text).toBe('streamed after the rate limit')
    expect(result.llmAttempts[0]).toMatchObject({ outcome: 'failed', code: 'rate_limited', retryable: true, streamed: true })
  })

  it('503 then 200 is retried; with no policy the 503 fails saying no retry policy applied', async () => {
    const rules = [chatRule(503, errorBody('The server is overloaded', 'server_error'), { sequence: 0 }), chatRule(200, completion('back again'), { sequence: 1 })]
    await mock.configure({ rules })
    const retried = await (await createAiSdkHost({ baseURL: mock.baseURL, modelId: 'mock-model', retry, streaming: false }).openSession(sessionRequest())).prompt('hi', turnSignal())
    expect(retried.text).toBe('back again')
    expect(retried.llmAttempts[0]).toMatchObject({ status: 503, code: 'provider_error', retryable: true })
    await mock.configure({ rules })
    const once = await (await createAiSdkHost({ baseURL: mock.baseURL, modelId: 'mock-model', streaming: false }).openSession(sessionRequest())).prompt('hi', turnSignal())
    expect(once.reason).toContain('HTTP 503 provider_error, after 1 LLM attempt: no retry policy applies to this call')
  })

  it('through the runtime: a role policy absorbs a 503 and llm-attempts.jsonl keeps both attempts', async () => {
    await mock.configure({ rules: [chatRule(503, errorBody('overloaded', 'server_error'), { sequence: 0 }), chatRule(200, completion('done'), { sequence: 1 })] })
    const run = await runWorkflowScript(
      {
        name: 'mock-llm',
        agents: { writer: { retry } },
        async run({ agent }) {
          const { answer } = await agent('write', { agent: 'writer' })
          return { ok: true, answer }
        },
      },
      { host: createAiSdkHost({ baseURL: mock.baseURL, modelId: 'mock-model' }), runsDir: tempDir() },
    )
    expect(run.result).toEqual({ ok: true, answer: 'done' })
    const end = readJsonLines(join(run.runDir, 'journal.jsonl')).find((line) => line.type === 'agent_end')!
    const attemptsFile = join(run.runDir, 'calls', String(end.callId), 'transcript', 'llm-attempts.jsonl')
    expect(existsSync(attemptsFile)).toBe(true)
    // Streamed, mock-llm reports the 503 as an error object inside a 200 stream: no status, classified from its type.
    expect(readJsonLines(attemptsFile).map((line) => [line.attempt, line.outcome, line.code ?? null])).toEqual([
      [1, 'failed', 'provider_error'],
      [2, 'succeeded', null],
    ])
  })
})

describe('mock-llm: a server that stops answering', () => {
  it('frozen (SIGSTOP): the idle bound ends the turn as host-turn-timeout instead of hanging', async () => {
    const frozen = await startMockLlm()
    try {
      frozen.freeze()
      const session = await createAiSdkHost({ baseURL: frozen.baseURL, modelId: 'mock-model', turnBudget: { idleMs: 300 } }).openSession(sessionRequest())
      const started = performance.now()
      const result = await session.prompt('hi', turnSignal())
      expect(performance.now() - started).toBeLessThan(5_000)
      expect(result).toMatchObject({ stopReason: 'aborted', failureCause: 'host-turn-timeout' })
      expect(result.llmAttempts).toEqual([expect.objectContaining({ turnBudget: 'idle', outcome: 'timed-out' })])
    } finally {
      await frozen.kill()
    }
  }, 15_000)

  it('killed (SIGKILL): connection refused is retried, then fails naming the attempts', async () => {
    const killed = await startMockLlm()
    await killed.kill()
    const session = await createAiSdkHost({ baseURL: killed.baseURL, modelId: 'mock-model', retry: { ...retry, max_retries: 2 } }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result).toMatchObject({ stopReason: 'error', failureCause: 'provider-error' })
    expect(result.reason).toContain('no HTTP status, provider_error, after 2 LLM attempts (retries exhausted')
    expect(result.llmAttempts.map((attempt) => [attempt.outcome, attempt.retryable])).toEqual([
      ['failed', true],
      ['failed', true],
    ])
  }, 15_000)

  it('killed in the middle of a stream: the dropped connection is a retryable provider_error', async () => {
    const dying = await startMockLlm()
    await dying.configure({ streaming: { chunkSize: 2, chunkIntervalMs: 50 }, rules: [chatRule(200, completion('a long answer that will never finish streaming'))] })
    const session = await createAiSdkHost({ baseURL: dying.baseURL, modelId: 'mock-model', retry: { ...retry, max_retries: 2 } }).openSession(sessionRequest())
    let killing: Promise<void> | undefined
    const result = await session.prompt('hi', {
      ...turnSignal(),
      onProgress: (event) => {
        if (event.kind === 'first-token') killing ??= dying.kill()
      },
    })
    await killing
    expect(result).toMatchObject({ stopReason: 'error', failureCause: 'provider-error' })
    expect(result.llmAttempts[0]).toMatchObject({ outcome: 'failed', code: 'provider_error', retryable: true })
    expect(result.llmAttempts).toHaveLength(2)
  }, 15_000)
})
