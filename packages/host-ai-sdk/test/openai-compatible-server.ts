/**
 * A small OpenAI-compatible chat server on loopback, written for tests. It
 * speaks the real wire format of `POST /v1/chat/completions` (JSON and
 * server-sent events, text and tool calls) and plays scripted replies: an
 * answer, a tool call, a `length` stop, an HTTP error with headers, a hang,
 * a malformed body, a reset connection, a slow stream or an error inside a stream. It records every request and
 * notices when a client closes a connection before the reply ended.
 *
 * Other packages' tests (the CLI's end-to-end test) import it by relative path.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

/** Token counts the server reports in `usage`. */
export interface ScriptedUsage {
  readonly promptTokens: number
  readonly completionTokens: number
}

/** One scripted reply to one request. */
export type ScriptedReply =
  /** An assistant message; `finishReason` `length` or `content_filter` simulates those stops. */
  | { readonly kind: 'text'; readonly text: string; readonly finishReason?: 'stop' | 'length' | 'content_filter'; readonly usage?: ScriptedUsage }
  /** The model asks for one or more tool calls (`finish_reason: "tool_calls"`). */
  | {
      readonly kind: 'tool-calls'
      readonly calls: ReadonlyArray<{ readonly name: string; readonly args: unknown; readonly id?: string }>
      readonly usage?: ScriptedUsage
    }
  /** An HTTP error status with an OpenAI-style error body and optional headers (`Retry-After`). */
  | { readonly kind: 'status'; readonly status: number; readonly message?: string; readonly headers?: Readonly<Record<string, string>> }
  /** Accepts the request and never answers, until the client goes away. */
  | { readonly kind: 'hang' }
  /** A 200 response whose body is not JSON. */
  | { readonly kind: 'malformed' }
  /** Destroys the socket without a response (a connection reset). */
  | { readonly kind: 'reset' }
  /**
   * A text answer sent piece by piece, `intervalMs` of real time apart (a slow
   * generation); a client that did not ask for a stream gets the whole answer
   * once every piece would have been sent.
   */
  | { readonly kind: 'drip'; readonly pieces: readonly string[]; readonly intervalMs: number; readonly usage?: ScriptedUsage }
  /** A 200 stream whose one event is an error object, as servers report failures met after the headers went out. */
  | { readonly kind: 'stream-error'; readonly error: { readonly message: string; readonly type?: string; readonly code?: string | number } }

/** A request the server received. */
export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  /** The parsed JSON body, or the raw text when it was not JSON. */
  readonly body: ChatRequestBody
  /** The reading of the `now` option when the request arrived. */
  readonly receivedAt: number
  /** True once the client closed the connection before the reply finished. */
  clientClosed: boolean
}

/** The parts of a chat completion request the tests look at. */
export interface ChatRequestBody {
  readonly model?: string
  readonly stream?: boolean
  readonly messages?: ReadonlyArray<{ readonly role: string; readonly content?: unknown; readonly tool_calls?: unknown; readonly tool_call_id?: string }>
  readonly tools?: ReadonlyArray<{ readonly type: string; readonly function: { readonly name: string; readonly description?: string; readonly parameters?: unknown } }>
  readonly max_tokens?: number
  readonly [key: string]: unknown
}

export interface OpenAiCompatibleTestServerOptions {
  /** Replies played in order; once used up, `fallback` answers. */
  readonly replies?: readonly ScriptedReply[]
  /** Answers every request once the queue is empty, or picks a reply from the request. @default a text reply "ok" */
  readonly fallback?: ScriptedReply | ((request: RecordedRequest) => ScriptedReply)
  /** The time stamped on each recorded request; pass a manual clock's `now`. @default Date.now */
  readonly now?: () => number
}

export interface OpenAiCompatibleTestServer {
  /** `http://127.0.0.1:<port>/v1`, the base URL a client is given. */
  readonly baseURL: string
  /** Every request, in arrival order. */
  readonly requests: readonly RecordedRequest[]
  /** Appends replies to the queue. */
  enqueue(...replies: ScriptedReply[]): void
  /** Resolves once at least `count` requests have arrived. */
  waitForRequests(count: number): Promise<void>
  /** Resolves once a client closed a connection before its reply finished. */
  waitForClientClose(): Promise<RecordedRequest>
  /** Stops the server and destroys open connections. */
  close(): Promise<void>
}

function usageOf(usage: ScriptedUsage | undefined): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  const prompt = usage?.promptTokens ?? 10
  const completion = usage?.completionTokens ?? 5
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
}

let completionCounter = 0

function toolCallsOf(reply: Extract<ScriptedReply, { kind: 'tool-calls' }>): Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> {
  return reply.calls.map((call, index) => ({
    id: call.id ?? `call_${completionCounter}_${index}`,
    type: 'function',
    function: { name: call.name, arguments: typeof call.args === 'string' ? call.args : JSON.stringify(call.args) },
  }))
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): void {
  const text = JSON.stringify(body)
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers })
  response.end(text)
}

function sendCompletion(response: ServerResponse, body: ChatRequestBody, reply: Extract<ScriptedReply, { kind: 'text' | 'tool-calls' }>): void {
  completionCounter += 1
  const id = `chatcmpl-${completionCounter}`
  const created = 1_700_000_000
  const model = body.model ?? 'test-model'
  const isText = reply.kind === 'text'
  const finishReason = isText ? (reply.finishReason ?? 'stop') : 'tool_calls'
  const toolCalls = isText ? undefined : toolCallsOf(reply)
  const usage = usageOf(reply.usage)
  if (body.stream !== true) {
    sendJson(response, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: isText ? reply.text : null, ...(toolCalls === undefined ? {} : { tool_calls: toolCalls }) },
          finish_reason: finishReason,
        },
      ],
      usage,
    })
    return
  }
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
  const chunk = (delta: unknown, finish: string | null, extra: Record<string, unknown> = {}): void => {
    response.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`)
  }
  chunk({ role: 'assistant', content: '' }, null)
  if (isText) {
    // Two pieces, so a client really has to join deltas.
    const middle = Math.ceil(reply.text.length / 2)
    for (const piece of [reply.text.slice(0, middle), reply.text.slice(middle)]) if (piece !== '') chunk({ content: piece }, null)
  } else {
    toolCalls?.forEach((call, index) => {
      chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: call.function.arguments } }] }, null)
    })
  }
  chunk({}, finishReason)
  const streamOptions = body.stream_options as { include_usage?: boolean } | undefined
  if (streamOptions?.include_usage === true) {
    response.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`)
  }
  response.end('data: [DONE]\n\n')
}

function drip(response: ServerResponse, body: ChatRequestBody, reply: Extract<ScriptedReply, { kind: 'drip' }>): void {
  const text = reply.pieces.join('')
  if (body.stream !== true) {
    const timer = setTimeout(() => {
      sendCompletion(response, body, { kind: 'text', text, ...(reply.usage === undefined ? {} : { usage: reply.usage }) })
    }, reply.intervalMs * reply.pieces.length)
    response.on('close', () => {
      clearTimeout(timer)
    })
    return
  }
  completionCounter += 1
  const id = `chatcmpl-${completionCounter}`
  const model = body.model ?? 'test-model'
  const chunk = (delta: unknown, finish: string | null, extra: Record<string, unknown> = {}): void => {
    response.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`)
  }
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
  chunk({ role: 'assistant', content: '' }, null)
  let index = 0
  const timer = setInterval(() => {
    if (response.destroyed) {
      clearInterval(timer)
      return
    }
    const piece = reply.pieces[index]
    index += 1
    if (piece !== undefined) {
      chunk({ content: piece }, null)
      return
    }
    clearInterval(timer)
    chunk({}, 'stop')
    const streamOptions = body.stream_options as { include_usage?: boolean } | undefined
    if (streamOptions?.include_usage === true) {
      response.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [], usage: usageOf(reply.usage) })}\n\n`)
    }
    response.end('data: [DONE]\n\n')
  }, reply.intervalMs)
  response.on('close', () => {
    clearInterval(timer)
  })
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      resolve(Buffer.concat(chunks).toString('utf8'))
    })
    request.on('error', reject)
  })
}

/**
 * Starts the server on `127.0.0.1`, port 0 (a free port).
 *
 * @example
 * ```ts
 * const server = await createOpenAiCompatibleTestServer({ replies: [{ kind: 'status', status: 503 }, { kind: 'text', text: 'hi' }] })
 * const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'test-model' })
 * // ...
 * await server.close()
 * ```
 */
export async function createOpenAiCompatibleTestServer(options: OpenAiCompatibleTestServerOptions = {}): Promise<OpenAiCompatibleTestServer> {
  const queue: ScriptedReply[] = [...(options.replies ?? [])]
  const requests: RecordedRequest[] = []
  const sockets = new Set<Socket>()
  const now = options.now ?? Date.now
  const requestWaiters: Array<{ count: number; resolve: () => void }> = []
  const closeWaiters: Array<(request: RecordedRequest) => void> = []
  const closedUnseen: RecordedRequest[] = []

  const notifyRequests = (): void => {
    for (const waiter of [...requestWaiters]) {
      if (requests.length >= waiter.count) {
        requestWaiters.splice(requestWaiters.indexOf(waiter), 1)
        waiter.resolve()
      }
    }
  }

  const nextReply = (recorded: RecordedRequest): ScriptedReply => {
    const queued = queue.shift()
    if (queued !== undefined) return queued
    const fallback = options.fallback ?? { kind: 'text', text: 'ok' }
    return typeof fallback === 'function' ? fallback(recorded) : fallback
  }

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const raw = await readBody(request)
    let body: ChatRequestBody
    try {
      body = JSON.parse(raw) as ChatRequestBody
    } catch {
      body = { raw }
    }
    const recorded: RecordedRequest = {
      method: request.method ?? 'GET',
      path: request.url ?? '/',
      headers: request.headers,
      body,
      receivedAt: now(),
      clientClosed: false,
    }
    requests.push(recorded)
    let resetByServer = false
    response.on('close', () => {
      if (response.writableFinished || resetByServer) return
      recorded.clientClosed = true
      const waiter = closeWaiters.shift()
      if (waiter === undefined) closedUnseen.push(recorded)
      else waiter(recorded)
    })
    notifyRequests()

    if (request.method !== 'POST' || request.url !== '/v1/chat/completions') {
      sendJson(response, 404, { error: { message: `no route ${request.method ?? ''} ${request.url ?? ''}`, type: 'not_found' } })
      return
    }
    const reply = nextReply(recorded)
    switch (reply.kind) {
      case 'text':
      case 'tool-calls':
        sendCompletion(response, body, reply)
        return
      case 'status':
        sendJson(
          response,
          reply.status,
          { error: { message: reply.message ?? `scripted status ${reply.status}`, type: 'scripted', code: String(reply.status) } },
          reply.headers,
        )
        return
      case 'hang':
        // Headers are never sent: the client sees a server that accepted the request and went quiet.
        return
      case 'malformed':
        response.writeHead(200, { 'content-type': 'application/json' })
        response.end('{"id": "chatcmpl-broken", "choices": [ this is not json')
        return
      case 'reset':
        resetByServer = true
        request.socket.destroy()
        return
      case 'drip':
        drip(response, body, reply)
        return
      case 'stream-error':
        response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
        response.end(`data: ${JSON.stringify({ error: reply.error })}\n\n`)
        return
    }
  }

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) sendJson(response, 500, { error: { message: String(error) } })
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  let closing: Promise<void> | undefined

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue: (...replies) => {
      queue.push(...replies)
    },
    waitForRequests: (count) =>
      new Promise((resolve) => {
        requestWaiters.push({ count, resolve })
        notifyRequests()
      }),
    waitForClientClose: () =>
      new Promise((resolve) => {
        const seen = closedUnseen.shift()
        if (seen === undefined) closeWaiters.push(resolve)
        else resolve(seen)
      }),
    close: () => {
      // Idempotent: a test may close the server early to simulate an endpoint that is gone.
      closing ??= new Promise<void>((resolve, reject) => {
        for (const socket of sockets) socket.destroy()
        server.close((error) => {
          if (error === undefined) resolve()
          else reject(error)
        })
      })
      return closing
    },
  }
}
