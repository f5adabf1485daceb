/**
 * `@locus/host-ai-sdk/testing`: small loopback servers that speak providers'
 * real wire formats, so a test (of this package, or a CLI run with
 * `--provider` and `--base-url`) drives each AI SDK provider package for real:
 * OpenAI's chat completions (`POST /v1/chat/completions`, with prompt-cache and
 * reasoning token details), Anthropic's Messages API (`POST /v1/messages`, JSON
 * or server-sent events with `event:` names) and Google's Gemini API (`POST
 * /v1beta/models/{model}:generateContent` and `:streamGenerateContent?alt=sse`).
 * Each plays scripted replies (an answer with usage, an HTTP error with the
 * provider's error body and headers, a response recorded from the provider, or
 * a hang) and records every request.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/** Usage as a provider reports it, in the terms the tests use. */
export interface WireUsage {
  /** Prompt tokens not read from or written to a cache. */
  readonly plainInputTokens: number
  readonly cacheReadTokens?: number
  readonly cacheWriteTokens?: number
  /** Every output token, reasoning included. */
  readonly outputTokens: number
  readonly reasoningTokens?: number
}

/** One scripted reply. */
export type WireReply =
  | { readonly kind: 'text'; readonly text: string; readonly usage: WireUsage; readonly stop?: 'end' | 'length' }
  /** The model asks for one tool call (`id` where the provider gives ids; Google's have none). */
  | { readonly kind: 'tool-call'; readonly tool: string; readonly args: Readonly<Record<string, unknown>>; readonly id?: string; readonly usage: WireUsage }
  | { readonly kind: 'status'; readonly status: number; readonly message: string; readonly headers?: Readonly<Record<string, string>> }
  /** Never answers: the request stays open until the client gives up or the server closes. */
  | { readonly kind: 'hang' }
  /**
   * A response body as the provider sent it (recorded), answered as is with
   * status 200 to a whole (not streamed) request; a streamed request gets a 400 saying so.
   */
  | { readonly kind: 'recorded'; readonly body: unknown }

/** A request the server received. */
export interface WireRequest {
  readonly path: string
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  readonly body: Record<string, unknown>
  readonly receivedAt: number
}

/** A running test server. */
export interface WireServer {
  /** The base URL to give the provider (`http://127.0.0.1:port/v1` or `.../v1beta`). */
  readonly baseURL: string
  readonly requests: WireRequest[]
  close(): Promise<void>
}

/** The wire formats: OpenAI's chat completions, Anthropic's Messages API, Google's Gemini API. */
export type WireFormat = 'openai' | 'anthropic' | 'google'

interface Options {
  readonly replies: readonly WireReply[]
  readonly now?: () => number
}

function readBody(request: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>)
      } catch {
        resolve({})
      }
    })
  })
}

function sse(response: ServerResponse, events: ReadonlyArray<{ event?: string; data: unknown }>): void {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  for (const { event, data } of events) response.write(`${event === undefined ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`)
  response.end()
}

function anthropicUsage(usage: WireUsage): Record<string, number> {
  return {
    input_tokens: usage.plainInputTokens,
    cache_creation_input_tokens: usage.cacheWriteTokens ?? 0,
    cache_read_input_tokens: usage.cacheReadTokens ?? 0,
    output_tokens: usage.outputTokens,
  }
}

type Answer = Exclude<WireReply, { kind: 'hang' } | { kind: 'recorded' }>

function openAiUsage(usage: WireUsage): Record<string, unknown> {
  const cached = usage.cacheReadTokens ?? 0
  const prompt = usage.plainInputTokens + cached
  return {
    prompt_tokens: prompt,
    completion_tokens: usage.outputTokens,
    total_tokens: prompt + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: cached },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
  }
}

function answerOpenAi(reply: Answer, streamed: boolean, model: string, response: ServerResponse): void {
  if (reply.kind === 'status') {
    const type = reply.status === 429 ? 'rate_limit_exceeded' : reply.status >= 500 ? 'server_error' : 'invalid_request_error'
    response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(JSON.stringify({ error: { message: reply.message, type, param: null, code: null } }))
    return
  }
  const usage = openAiUsage(reply.usage)
  if (reply.kind === 'tool-call') {
    const call = { id: reply.id ?? 'call_test', type: 'function', function: { name: reply.tool, arguments: JSON.stringify(reply.args) } }
    if (!streamed) {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({ id: 'chatcmpl-test', object: 'chat.completion', created: 1, model, choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [call] }, finish_reason: 'tool_calls' }], usage }),
      )
      return
    }
    const chunks = [
      { id: 'chatcmpl-test', object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta: { role: 'assistant', tool_calls: [{ index: 0, ...call }] }, finish_reason: null }] },
      { id: 'chatcmpl-test', object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }], usage },
    ]
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    for (const data of chunks) response.write(`data: ${JSON.stringify(data)}\n\n`)
    response.end('data: [DONE]\n\n')
    return
  }
  const finish = reply.stop === 'length' ? 'length' : 'stop'
  if (!streamed) {
    response.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({ id: 'chatcmpl-test', object: 'chat.completion', created: 1, model, choices: [{ index: 0, message: { role: 'assistant', content: reply.text }, finish_reason: finish }], usage }),
    )
    return
  }
  const chunk = (delta: object, finishReason: string | null, withUsage = false) => ({
    id: 'chatcmpl-test',
    object: 'chat.completion.chunk',
    created: 1,
    model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
    ...(withUsage ? { usage } : {}),
  })
  const half = Math.ceil(reply.text.length / 2)
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  for (const data of [chunk({ role: 'assistant', content: reply.text.slice(0, half) }, null), chunk({ content: reply.text.slice(half) }, null), chunk({}, finish, true)]) {
    response.write(`data: ${JSON.stringify(data)}\n\n`)
  }
  response.end('data: [DONE]\n\n')
}

function answerAnthropic(reply: Answer, streamed: boolean, model: string, response: ServerResponse): void {
  if (reply.kind === 'status') {
    const type = reply.status === 429 ? 'rate_limit_error' : reply.status >= 500 ? 'api_error' : 'invalid_request_error'
    response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(JSON.stringify({ type: 'error', error: { type, message: reply.message } }))
    return
  }
  const usage = anthropicUsage(reply.usage)
  const start = { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_test', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } } }
  const end = (stop: string) => [
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: reply.usage.outputTokens } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ]
  if (reply.kind === 'tool-call') {
    const id = reply.id ?? 'toolu_test'
    if (!streamed) {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({ id: 'msg_test', type: 'message', role: 'assistant', model, content: [{ type: 'tool_use', id, name: reply.tool, input: reply.args }], stop_reason: 'tool_use', stop_sequence: null, usage }),
      )
      return
    }
    sse(response, [
      start,
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id, name: reply.tool, input: {} } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(reply.args) } } },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      ...end('tool_use'),
    ])
    return
  }
  const stopReason = reply.stop === 'length' ? 'max_tokens' : 'end_turn'
  if (!streamed) {
    response.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({ id: 'msg_test', type: 'message', role: 'assistant', model, content: [{ type: 'text', text: reply.text }], stop_reason: stopReason, stop_sequence: null, usage }),
    )
    return
  }
  const half = Math.ceil(reply.text.length / 2)
  sse(response, [
    start,
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: reply.text.slice(0, half) } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: reply.text.slice(half) } } },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    ...end(stopReason),
  ])
}

function googleUsage(usage: WireUsage): Record<string, number> {
  const cached = usage.cacheReadTokens ?? 0
  const thoughts = usage.reasoningTokens ?? 0
  const prompt = usage.plainInputTokens + cached
  // Gemini counts thoughts apart from the candidates' tokens.
  const candidates = usage.outputTokens - thoughts
  return { promptTokenCount: prompt, candidatesTokenCount: candidates, thoughtsTokenCount: thoughts, cachedContentTokenCount: cached, totalTokenCount: prompt + candidates + thoughts }
}

function answerGoogle(reply: Answer, streamed: boolean, response: ServerResponse): void {
  if (reply.kind === 'status') {
    const status = reply.status === 429 ? 'RESOURCE_EXHAUSTED' : reply.status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT'
    response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(JSON.stringify({ error: { code: reply.status, message: reply.message, status } }))
    return
  }
  if (reply.kind === 'tool-call') {
    // Gemini gives a function call no id, and ends the turn with STOP.
    const body = { candidates: [{ content: { parts: [{ functionCall: { name: reply.tool, args: reply.args } }], role: 'model' }, index: 0, finishReason: 'STOP' }], usageMetadata: googleUsage(reply.usage) }
    if (streamed) sse(response, [{ data: body }])
    else response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    return
  }
  const finishReason = reply.stop === 'length' ? 'MAX_TOKENS' : 'STOP'
  const candidate = (text: string, finish?: string) => ({ content: { parts: [{ text }], role: 'model' }, index: 0, ...(finish === undefined ? {} : { finishReason: finish }) })
  if (!streamed) {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ candidates: [candidate(reply.text, finishReason)], usageMetadata: googleUsage(reply.usage) }))
    return
  }
  const half = Math.ceil(reply.text.length / 2)
  sse(response, [{ data: { candidates: [candidate(reply.text.slice(0, half))] } }, { data: { candidates: [candidate(reply.text.slice(half), finishReason)], usageMetadata: googleUsage(reply.usage) } }])
}

/** Starts a loopback server speaking `format`. */
export async function createWireServer(format: WireFormat, options: Options): Promise<WireServer> {
  const requests: WireRequest[] = []
  const replies = [...options.replies]
  const now = options.now ?? Date.now
  const server: Server = createServer((request, response) => {
    void readBody(request).then((body) => {
      const path = request.url ?? ''
      requests.push({ path, headers: request.headers, body, receivedAt: now() })
      const reply = replies.shift() ?? { kind: 'status', status: 500, message: 'no scripted reply left' }
      if (reply.kind === 'hang') return
      if (reply.kind === 'recorded') {
        const streamed = body.stream === true || path.includes(':streamGenerateContent')
        if (streamed) response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'a recorded reply answers a whole request: turn streaming off' } }))
        else response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply.body))
        return
      }
      const model = typeof body.model === 'string' ? body.model : ''
      if (format === 'openai') answerOpenAi(reply, body.stream === true, model, response)
      else if (format === 'anthropic') answerAnthropic(reply, body.stream === true, model, response)
      else answerGoogle(reply, path.includes(':streamGenerateContent'), response)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseURL: `http://127.0.0.1:${port}/${format === 'google' ? 'v1beta' : 'v1'}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => {
          resolve()
        })
      }),
  }
}
