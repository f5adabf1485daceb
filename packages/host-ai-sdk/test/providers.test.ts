// The same host contract for every provider the host speaks: an OpenAI-compatible
// server, Anthropic's Messages API and Google's Gemini API, each through the AI
// SDK's own provider package against a loopback server that speaks its wire format.
import { join } from 'node:path'
import { createManualClock } from '@locus/retry'
import { type HostTool, runWorkflowScript } from '@locus/runtime'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { AiSdkHostOptionsError, type LlmAttempt, createAiSdkHost } from '../src/index.js'
import { readJsonLines, sessionRequest, startServer, tempDir, turnSignal, waitUntil } from './helpers.js'
import { type WireReply, type WireServer, createWireServer } from '../src/testing.js'

const noTurnBudget = { totalMs: null, idleMs: null }
const policy = { timeout_secs: null, max_retries: 3, backoff_base_secs: 1, backoff_max_secs: 60 }

interface Endpoint {
  readonly baseURL: string
  readonly requestCount: () => number
  /** The JSON body of each request received, in order. */
  readonly bodies: () => readonly unknown[]
}

interface ProviderCase {
  readonly name: 'openai-compatible' | 'anthropic' | 'google'
  readonly model: string
  /** Whether the wire format says how many prompt tokens came from a cache, and how many output tokens were reasoning. */
  readonly reportsCacheReads: boolean
  readonly reportsCacheWrites: boolean
  readonly reportsReasoning: boolean
  start(replies: readonly WireReply[], now: () => number): Promise<Endpoint>
}

const wireServers: WireServer[] = []
afterEach(async () => {
  for (const server of wireServers.splice(0)) await server.close()
})

async function wire(format: 'anthropic' | 'google', replies: readonly WireReply[], now: () => number): Promise<Endpoint> {
  const server = await createWireServer(format, { replies, now })
  wireServers.push(server)
  return { baseURL: server.baseURL, requestCount: () => server.requests.length, bodies: () => server.requests.map((request) => request.body) }
}

const cases: readonly ProviderCase[] = [
  {
    name: 'openai-compatible',
    model: 'test-model',
    reportsCacheReads: false,
    reportsCacheWrites: false,
    reportsReasoning: false,
    async start(replies, now) {
      const server = await startServer({
        now,
        replies: replies.map((reply) => {
          switch (reply.kind) {
            case 'hang':
              return { kind: 'hang' as const }
            case 'status':
              return { kind: 'status' as const, status: reply.status, message: reply.message, ...(reply.headers === undefined ? {} : { headers: reply.headers }) }
            case 'text':
              return { kind: 'text' as const, text: reply.text, finishReason: reply.stop === 'length' ? ('length' as const) : ('stop' as const), usage: { promptTokens: reply.usage.plainInputTokens, completionTokens: reply.usage.outputTokens } }
            case 'tool-call':
              return { kind: 'tool-calls' as const, calls: [{ name: reply.tool, args: reply.args, ...(reply.id === undefined ? {} : { id: reply.id }) }], usage: { promptTokens: reply.usage.plainInputTokens, completionTokens: reply.usage.outputTokens } }
            case 'recorded':
              throw new Error('the OpenAI-compatible test server plays no recorded bodies')
          }
        }),
      })
      return { baseURL: server.baseURL, requestCount: () => server.requests.length, bodies: () => server.requests.map((request) => request.body) }
    },
  },
  { name: 'anthropic', model: 'claude-3-5-haiku-latest', reportsCacheReads: true, reportsCacheWrites: true, reportsReasoning: false, start: (replies, now) => wire('anthropic', replies, now) },
  { name: 'google', model: 'gemini-2.5-flash', reportsCacheReads: true, reportsCacheWrites: false, reportsReasoning: true, start: (replies, now) => wire('google', replies, now) },
]

/** Every string a request body holds under a `text` or `content` key, in order: the conversation, in any provider's shape. */
function textsOf(body: unknown): string[] {
  if (Array.isArray(body)) return body.flatMap(textsOf)
  if (typeof body !== 'object' || body === null) return []
  return Object.entries(body).flatMap(([key, value]) => ((key === 'text' || key === 'content') && typeof value === 'string' ? [value] : textsOf(value)))
}

const usage = { plainInputTokens: 40, cacheReadTokens: 100, cacheWriteTokens: 10, outputTokens: 30, reasoningTokens: 12 }

describe.each(cases)('the $name provider', (provider) => {
  const host = (endpoint: Endpoint, extra: Record<string, unknown> = {}) =>
    createAiSdkHost({ provider: provider.name, baseURL: endpoint.baseURL, apiKey: 'test-key', modelId: provider.model, turnBudget: noTurnBudget, ...extra })

  it.each([true, false])('answers a turn (streaming %s) and reports its usage, cache and reasoning tokens as the provider gave them', async (streaming) => {
    const clock = createManualClock()
    const reply: WireReply = provider.name === 'google' ? { kind: 'text', text: 'the answer', usage: { ...usage, cacheWriteTokens: 0 } } : provider.name === 'anthropic' ? { kind: 'text', text: 'the answer', usage: { ...usage, reasoningTokens: 0 } } : { kind: 'text', text: 'the answer', usage }
    const endpoint = await provider.start([reply], clock.now)
    const attempts: LlmAttempt[] = []
    const session = await host(endpoint, { streaming, onLlmAttempt: (attempt: LlmAttempt) => attempts.push(attempt) }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result).toMatchObject({ text: 'the answer', stopReason: 'end' })
    expect(attempts).toHaveLength(1)
    const reported = attempts[0]?.usage
    const cached = (provider.reportsCacheReads ? usage.cacheReadTokens : 0) + (provider.reportsCacheWrites ? usage.cacheWriteTokens : 0)
    // Every provider's input count includes the cached prompt tokens; its output count includes reasoning.
    expect(reported?.inputTokens).toBe(usage.plainInputTokens + cached)
    expect(reported?.outputTokens).toBe(usage.outputTokens)
    expect(reported?.cacheReadTokens).toBe(provider.reportsCacheReads ? usage.cacheReadTokens : undefined)
    expect(reported?.cacheWriteTokens).toBe(provider.reportsCacheWrites ? usage.cacheWriteTokens : undefined)
    expect(reported?.reasoningTokens).toBe(provider.reportsReasoning ? usage.reasoningTokens : undefined)
  })

  it('waits out a 429 for at least its Retry-After, then succeeds on the next attempt', async () => {
    const clock = createManualClock()
    const endpoint = await provider.start([{ kind: 'status', status: 429, message: 'slow down', headers: { 'retry-after': '7' } }, { kind: 'text', text: 'ok', usage }], clock.now)
    const attempts: LlmAttempt[] = []
    const session = await host(endpoint, { clock, retry: policy, onLlmAttempt: (attempt: LlmAttempt) => attempts.push(attempt) }).openSession(sessionRequest())
    const turn = session.prompt('hi', turnSignal())
    await waitUntil(() => clock.pendingSleeps().length > 0, 'the backoff sleep')
    expect(clock.pendingSleeps()).toEqual([{ wakeAt: 7000, ms: 7000 }])
    await clock.advance(7000)
    expect(await turn).toMatchObject({ text: 'ok' })
    expect(endpoint.requestCount()).toBe(2)
    expect(attempts.map((attempt) => [attempt.outcome, attempt.code, attempt.status, attempt.retryable])).toEqual([
      ['failed', 'rate_limited', 429, true],
      ['succeeded', undefined, undefined, undefined],
    ])
  })

  it('retries a 5xx as a provider error and gives up on a 400 at once', async () => {
    const clock = createManualClock()
    const endpoint = await provider.start([{ kind: 'status', status: 503, message: 'overloaded' }, { kind: 'status', status: 400, message: 'prompt is too long: 300000 tokens > 200000 maximum' }], clock.now)
    const attempts: LlmAttempt[] = []
    const session = await host(endpoint, { clock, retry: { ...policy, backoff_base_secs: 0 }, onLlmAttempt: (attempt: LlmAttempt) => attempts.push(attempt) }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result).toMatchObject({ stopReason: 'error', failureCause: 'provider-error' })
    expect(attempts.map((attempt) => [attempt.code, attempt.status, attempt.retryable])).toEqual([
      ['provider_error', 503, true],
      ['provider_error', 400, false],
    ])
    expect(endpoint.requestCount()).toBe(2)
  })

  it('ends a turn the model cut short for length as length', async () => {
    const endpoint = await provider.start([{ kind: 'text', text: 'half an ans', usage, stop: 'length' }], Date.now)
    const result = await (await host(endpoint).openSession(sessionRequest())).prompt('hi', turnSignal())
    expect(result.stopReason).toBe('length')
  })

  it.each([true, false])('runs a tool the model asks for through HostTool.invoke and sends its result back (streaming %s)', async (streaming) => {
    const endpoint = await provider.start(
      [
        { kind: 'tool-call', tool: 'weather', args: { city: 'Oslo' }, id: 'call_w1', usage },
        { kind: 'text', text: 'It is 21 degrees in Oslo.', usage },
      ],
      Date.now,
    )
    const invoked: unknown[] = []
    const weather: HostTool = {
      name: 'weather',
      description: 'Current weather of a city',
      input: z.object({ city: z.string() }),
      invoke: async (args) => {
        invoked.push(args)
        return { city: (args as { city: string }).city, celsius: 21 }
      },
    }
    const session = await host(endpoint, { streaming }).openSession(sessionRequest({ tools: [weather] }))
    expect(await session.prompt('Weather in Oslo?', turnSignal())).toMatchObject({ text: 'It is 21 degrees in Oslo.', stopReason: 'end' })
    expect(invoked).toEqual([{ city: 'Oslo' }])
    expect(endpoint.requestCount()).toBe(2)
    // The tool is offered with its description and schema, and its result goes back to the model.
    expect(JSON.stringify(endpoint.bodies()[0])).toContain('Current weather of a city')
    expect(JSON.stringify(endpoint.bodies()[1])).toMatch(/celsius[^,]*21/)
    expect(session.transcript().map((entry) => entry.role)).toEqual(['user', 'assistant', 'tool', 'assistant'])
  })

  it('continues a session: the second turn sends the first question and its answer back', async () => {
    const endpoint = await provider.start([{ kind: 'text', text: 'first answer', usage }, { kind: 'text', text: 'second answer', usage }], Date.now)
    const session = await host(endpoint).openSession(sessionRequest())
    expect(await session.prompt('first question', turnSignal())).toMatchObject({ text: 'first answer' })
    expect(await session.prompt('second question', turnSignal())).toMatchObject({ text: 'second answer' })
    const conversation = (body: unknown) => textsOf(body).filter((text) => / (question|answer)$/.test(text))
    expect(conversation(endpoint.bodies()[0])).toEqual(['first question'])
    expect(conversation(endpoint.bodies()[1])).toEqual(['first question', 'first answer', 'second question'])
  })

  it('a cancelled run journals the request in flight as an llm_attempt, outcome cancelled', async () => {
    const endpoint = await provider.start([{ kind: 'hang' }], Date.now)
    const controller = new AbortController()
    const running = runWorkflowScript(async ({ agent }) => ({ ok: true, answer: (await agent('hi')).answer }), { host: host(endpoint), runsDir: tempDir(), signal: controller.signal })
    await waitUntil(() => endpoint.requestCount() === 1, 'the request on the wire')
    controller.abort('interrupted from the terminal (Ctrl-C)')
    const run = await running
    expect(run.disposition).toBe('cancelled')
    const llm = readJsonLines(join(run.runDir, 'journal.jsonl')).filter((line) => line.type === 'llm_attempt')
    expect(llm).toMatchObject([{ outcome: 'cancelled', model: provider.model }])
  })

  it('a request that goes quiet past the turn budget times out and the retry answers, each request a journal line', async () => {
    const endpoint = await provider.start([{ kind: 'hang' }, { kind: 'text', text: 'answered', usage }], Date.now)
    const run = await runWorkflowScript(async ({ agent }) => ({ ok: true, answer: (await agent('hi', { attempts: 2 })).answer }), {
      host: host(endpoint, { turnBudget: { idleMs: 150 } }),
      runsDir: tempDir(),
    })
    expect(run.disposition).toBe('completed')
    expect(endpoint.requestCount()).toBe(2)
    const llm = readJsonLines(join(run.runDir, 'journal.jsonl')).filter((line) => line.type === 'llm_attempt')
    expect(llm.map((line) => line.outcome)).toEqual(['timed-out', 'succeeded'])
  })
})

describe('choosing a provider', () => {
  it('names the variable to set when a hosted provider has no key', () => {
    const saved = { anthropic: process.env.ANTHROPIC_API_KEY, google: process.env.GOOGLE_GENERATIVE_AI_API_KEY }
    delete process.env.ANTHROPIC_API_KEY
    delete process.env.GOOGLE_GENERATIVE_AI_API_KEY
    try {
      expect(() => createAiSdkHost({ provider: 'anthropic', modelId: 'claude-3-5-haiku-latest' })).toThrow(AiSdkHostOptionsError)
      expect(() => createAiSdkHost({ provider: 'anthropic', modelId: 'claude-3-5-haiku-latest' })).toThrow(/set ANTHROPIC_API_KEY/)
      expect(() => createAiSdkHost({ api: 'google', modelId: 'gemini-2.5-flash' })).toThrow(/set GOOGLE_GENERATIVE_AI_API_KEY/)
      process.env.ANTHROPIC_API_KEY = 'from-the-environment'
      expect(createAiSdkHost({ provider: 'anthropic', modelId: 'claude-3-5-haiku-latest' }).settings).toMatchObject({ api: 'anthropic', customModel: false })
    } finally {
      if (saved.anthropic === undefined) delete process.env.ANTHROPIC_API_KEY
      else process.env.ANTHROPIC_API_KEY = saved.anthropic
      if (saved.google !== undefined) process.env.GOOGLE_GENERATIVE_AI_API_KEY = saved.google
    }
  })

  it('lists the known providers when a name is not one of them', () => {
    expect(() => createAiSdkHost({ provider: 'mistral' as never, modelId: 'm' })).toThrow(/provider must be one of openai-compatible, openai, anthropic, google/)
    expect(() => createAiSdkHost({ provider: 'google', api: 'anthropic', apiKey: 'k', modelId: 'm' })).toThrow(/disagrees with api/)
  })

  it('sends the key where each provider expects it', async () => {
    const anthropic = await createWireServer('anthropic', { replies: [{ kind: 'text', text: 'a', usage }] })
    const google = await createWireServer('google', { replies: [{ kind: 'text', text: 'g', usage }] })
    wireServers.push(anthropic, google)
    await (await createAiSdkHost({ provider: 'anthropic', baseURL: anthropic.baseURL, apiKey: 'sk-ant', modelId: 'claude-3-5-haiku-latest' }).openSession(sessionRequest())).prompt('hi', turnSignal())
    await (await createAiSdkHost({ provider: 'google', baseURL: google.baseURL, apiKey: 'g-key', modelId: 'gemini-2.5-flash' }).openSession(sessionRequest())).prompt('hi', turnSignal())
    expect(anthropic.requests[0]).toMatchObject({ path: '/v1/messages', body: { model: 'claude-3-5-haiku-latest', stream: true } })
    expect(anthropic.requests[0]?.headers['x-api-key']).toBe('sk-ant')
    expect(google.requests[0]?.path).toMatch(/^\/v1beta\/models\/gemini-2\.5-flash:streamGenerateContent/)
    expect(google.requests[0]?.headers['x-goog-api-key']).toBe('g-key')
  })
})
