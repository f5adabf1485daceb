import { type EventSourceMessage, createParser } from 'eventsource-parser'
import { LocusApiError } from './api-error.js'
import type { Sleep } from './journal-events.js'

/** One record of a run's token stream: a piece of an LLM request's text, the request's end, or that its text was thrown away. */
export interface TokenStreamRecord {
  /** Gap-free from 0 over the whole run; the SSE `id:`. */
  readonly offset: number
  readonly executionId: string
  readonly callId: string
  readonly attempt: number
  /** Which request of the attempt (1, 2, ... when the host retried). */
  readonly llmAttempt: number
  readonly kind: 'delta' | 'discarded' | 'end'
  /** The text of a `delta`. */
  readonly text?: string
  /** Why a `discarded` request's text was thrown away (`call-timeout`, `llm-retry`, ...). */
  readonly cause?: string
}

/** One chunk of the AI SDK's UI message stream protocol (`{ type: 'text-delta', id, delta }`, ...), as `format: 'ui'` yields it. */
export interface UiStreamChunk {
  readonly type: string
  readonly [field: string]: unknown
}

/** Options of `client.stream`. */
export interface TokenStreamOptions {
  /** Start after this offset (the records up to it are not sent). @default -1, from the first record */
  readonly after?: number
  /** `raw` (the default): {@link TokenStreamRecord}s; `ui`: the AI SDK UI message stream's chunks. */
  readonly format?: 'raw' | 'ui'
  /** Stops the stream; the iterator then ends without an error. */
  readonly signal?: AbortSignal
  /** How to wait before a reconnect (the server's `retry:` hint, 1 s before one arrives). @default a timer */
  readonly sleep?: Sleep
  /** Connection attempts in a row that may fail (no answer, or 502/503/504) before the iterator throws the last error. @default 10 */
  readonly maxFailedConnects?: number
}

interface TokenStreamSource extends TokenStreamOptions {
  readonly runId: string
  readonly path: string
  readonly sleep: Sleep
  readonly open: (path: string, headers: Record<string, string>, query: Record<string, string | number | undefined>, signal: AbortSignal) => Promise<Response>
}

const RETRYABLE_STATUSES = new Set([0, 502, 503, 504])
const DEFAULT_RETRY_MS = 1_000

/**
 * Reads a run's token stream (`GET /v1/runs/{id}/stream`). Each connection
 * sends the offset of the last record it yielded as `Last-Event-ID`, so a
 * dropped connection (a restart, a takeover, a server that dropped a slow
 * reader) costs nothing: each record comes once, in offset order. Ends when
 * the server says the run ended and everything was sent (`event: done`, or
 * `[DONE]` in the UI format, or 204). A pruned offset throws the server's
 * 410 as a {@link LocusApiError} `stream_pruned` whose `firstKept` says where
 * the stream starts now.
 */
export async function* tokenStream(source: TokenStreamSource): AsyncGenerator<TokenStreamRecord | UiStreamChunk, void, undefined> {
  const stop = new AbortController()
  const onAbort = (): void => {
    stop.abort()
  }
  source.signal?.addEventListener('abort', onAbort, { once: true })
  if (source.signal?.aborted === true) stop.abort()
  const stopped = (): boolean => stop.signal.aborted
  const format = source.format ?? 'raw'
  let last = source.after ?? -1
  let retryMs = DEFAULT_RETRY_MS
  let failedConnects = 0
  const maxFailedConnects = source.maxFailedConnects ?? 10
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
  const malformed = (id: string | undefined, error: unknown): LocusApiError =>
    new LocusApiError(`The token stream of run "${source.runId}" sent an event whose data is not JSON (id ${id ?? 'none'}).`, {
      code: 'unexpected_response',
      status: 200,
      request: `GET ${source.path}`,
      cause: error,
    })
  try {
    for (;;) {
      if (stopped()) return
      let response: Response
      try {
        response = await source.open(source.path, last >= 0 ? { 'last-event-id': String(last) } : {}, { format }, stop.signal)
      } catch (error) {
        if (stopped()) return
        if (!LocusApiError.isInstance(error) || !RETRYABLE_STATUSES.has(error.status)) throw error
        failedConnects += 1
        if (failedConnects > maxFailedConnects) throw error
        await source.sleep(retryMs, stop.signal)
        continue
      }
      failedConnects = 0
      if (response.status === 204 || response.body === null) return
      // Each event as it is parsed: `done` ends the stream, else one record or chunk (with the offset it carries, if any).
      const pending: ({ done: true } | { done: false; value: TokenStreamRecord | UiStreamChunk; offset: number | undefined })[] = []
      const fault: { error?: LocusApiError } = {}
      const parser = createParser({
        onEvent(message: EventSourceMessage) {
          if (message.event === 'done' || message.data === '[DONE]') {
            pending.push({ done: true })
            return
          }
          let value: TokenStreamRecord | UiStreamChunk
          try {
            value = JSON.parse(message.data) as TokenStreamRecord | UiStreamChunk
          } catch (error) {
            fault.error ??= malformed(message.id, error)
            return
          }
          const offset = format === 'raw' ? (value as TokenStreamRecord).offset : message.id === undefined || message.id === '' ? undefined : Number(message.id)
          pending.push({ done: false, value, offset })
        },
        onRetry(ms) {
          retryMs = ms
        },
      })
      reader = response.body.getReader()
      const decoder = new TextDecoder()
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>
        try {
          chunk = await reader.read()
        } catch {
          break // dropped: reconnect below
        }
        if (chunk.done) {
          parser.feed(decoder.decode())
        } else {
          parser.feed(decoder.decode(chunk.value, { stream: true }))
        }
        if (fault.error !== undefined) throw fault.error
        for (const event of pending.splice(0)) {
          if (event.done) return
          // A raw record at or below the last offset (which a correct server never sends) is not yielded twice.
          if (format === 'raw' && event.offset !== undefined && event.offset <= last) continue
          yield event.value
          if (event.offset !== undefined && event.offset > last) last = event.offset
          if (stopped()) return
        }
        if (chunk.done) break
      }
      // The stream ended or dropped before the run's end: only whole events were yielded, so `last` is where to pick up.
      await reader.cancel().catch(() => undefined)
      reader = undefined
      if (stopped()) return
      await source.sleep(retryMs, stop.signal)
    }
  } finally {
    source.signal?.removeEventListener('abort', onAbort)
    await reader?.cancel().catch(() => undefined)
  }
}
