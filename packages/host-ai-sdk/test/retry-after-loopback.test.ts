// Retry-After is a floor under the policy's backoff, on the real clock,
// against a loopback server written here (mock-llm cannot set headers).
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createAiSdkHost } from '../src/index.js'
import { sessionRequest, turnSignal } from './helpers.js'

interface Failure {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
}

interface Loopback {
  readonly baseURL: string
  /** performance.now() of each request's arrival. */
  readonly arrivals: number[]
  close(): Promise<void>
}

const open: Loopback[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((server) => server.close()))
})

/** Answers each request with the next scripted failure, then with "recovered" (streamed when asked). */
async function loopback(failures: readonly Failure[]): Promise<Loopback> {
  const queue = [...failures]
  const arrivals: number[] = []
  const sockets = new Set<Socket>()
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      arrivals.push(performance.now())
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { stream?: boolean }
      const failure = queue.shift()
      if (failure !== undefined) {
        response.writeHead(failure.status, { 'content-type': 'application/json', ...failure.headers })
        response.end(JSON.stringify({ error: { message: `scripted ${failure.status}`, type: 'scripted' } }))
        return
      }
      const choice = { index: 0, message: { role: 'assistant', content: 'recovered' }, finish_reason: 'stop' }
      if (body.stream !== true) {
        response.writeHead(200, { 'content-type': 'application/json' })
        response.end(JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [choice], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }))
        return
      }
      response.writeHead(200, { 'content-type': 'text/event-stream' })
      const event = (choices: unknown[]) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices })}\n\n`
      response.write(event([{ index: 0, delta: { role: 'assistant', content: 'recovered' }, finish_reason: null }]))
      response.write(event([{ index: 0, delta: {}, finish_reason: 'stop' }]))
      response.end('data: [DONE]\n\n')
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const handle: Loopback = {
    baseURL: `http://127.0.0.1:${port}/v1`,
    arrivals,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => {
          resolve()
        })
      }),
  }
  open.push(handle)
  return handle
}

const policy = (backoffSecs: number) => ({ timeout_secs: 10, max_retries: 3, backoff_base_secs: backoffSecs, backoff_max_secs: 5 })

describe('Retry-After on the real clock', () => {
  it('429 with Retry-After: 1 waits at least a second, although the policy backoff is zero', async () => {
    const server = await loopback([{ status: 429, headers: { 'retry-after': '1' } }])
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', retry: policy(0) }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result).toMatchObject({ text: 'recovered', stopReason: 'end' })
    expect(server.arrivals).toHaveLength(2)
    expect(server.arrivals[1]! - server.arrivals[0]!).toBeGreaterThanOrEqual(990)
    expect(result.llmAttempts[0]).toMatchObject({ status: 429, code: 'rate_limited', retryAfterMs: 1_000, delayBeforeNextMs: 1_000 })
  })

  it('503 with Retry-After is honoured the same way, streamed', async () => {
    const server = await loopback([{ status: 503, headers: { 'retry-after': '1' } }])
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', retry: policy(0) }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result.text).toBe('recovered')
    expect(server.arrivals[1]! - server.arrivals[0]!).toBeGreaterThanOrEqual(990)
    expect(result.llmAttempts[0]).toMatchObject({ status: 503, retryAfterMs: 1_000, delayBeforeNextMs: 1_000, streamed: true })
  })

  it('a Retry-After shorter than the backoff is only a floor: the backoff is waited', async () => {
    const server = await loopback([{ status: 429, headers: { 'retry-after-ms': '50' } }])
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', retry: policy(1) }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(result.text).toBe('recovered')
    expect(server.arrivals[1]! - server.arrivals[0]!).toBeGreaterThanOrEqual(990)
    expect(result.llmAttempts[0]).toMatchObject({ retryAfterMs: 50, delayBeforeNextMs: 1_000 })
  })

  it('with no retry policy a 429 is not retried, and the reason says there was no policy', async () => {
    const server = await loopback([{ status: 429, headers: { 'retry-after': '1' } }])
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm' }).openSession(sessionRequest())
    const result = await session.prompt('hi', turnSignal())
    expect(server.arrivals).toHaveLength(1)
    expect(result.reason).toContain('HTTP 429 rate_limited, after 1 LLM attempt: no retry policy applies to this call')
  })

  it("with the run's rate gate, a 429's Retry-After goes to the gate at once and the retry waits on the gate, not on a sleep of its own", async () => {
    const server = await loopback([{ status: 429, headers: { 'retry-after': '30' } }])
    const session = await createAiSdkHost({ baseURL: server.baseURL, modelId: 'm', retry: policy(0) }).openSession(sessionRequest())
    const told: { kind: string; at: number; detail?: unknown }[] = []
    const rateGate = {
      beforeRequest: (signal: AbortSignal) => {
        told.push({ kind: 'before', at: performance.now(), detail: signal.aborted })
        return Promise.resolve()
      },
      retryAfter: (model: string, ms: number) => {
        told.push({ kind: 'retry-after', at: performance.now(), detail: { model, ms } })
      },
    }
    const started = performance.now()
    const result = await session.prompt('hi', { ...turnSignal(), rateGate })
    expect(result).toMatchObject({ text: 'recovered', stopReason: 'end' })
    // The turn's first request was the runtime's to limit; the retry asked the gate, after the 429 was reported.
    expect(told.map((entry) => entry.kind)).toEqual(['retry-after', 'before'])
    expect(told[0]?.detail).toEqual({ model: 'm', ms: 30_000 })
    expect(told[1]?.detail).toBe(false)
    // No 30 s sleep of the host's own: the gate decides how long the retry waits.
    expect(performance.now() - started).toBeLessThan(5_000)
    expect(server.arrivals).toHaveLength(2)
    expect(result.llmAttempts[0]).toMatchObject({ status: 429, code: 'rate_limited', retryAfterMs: 30_000, delayBeforeNextMs: 0 })
  })
})
