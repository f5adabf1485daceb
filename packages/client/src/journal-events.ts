import type { JournalLine } from '@locus/journal'
import { type EventSourceMessage, createParser } from 'eventsource-parser'
import { LocusApiError } from './api-error.js'

/** Waits `ms` before a reconnect; resolves early when `signal` aborts. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>

/** Options of `client.events`. */
export interface EventsOptions {
  /** Start after this `seq` (the lines up to it are not sent). @default -1, from the first line */
  readonly after?: number
  /** Which execution (`resume-001`, ...). @default the latest when the stream first opens; reconnects stay on it */
  readonly execution?: string
  /** Stops the stream; the iterator then ends without an error. */
  readonly signal?: AbortSignal
  /** How to wait before a reconnect (the server's `retry:` hint, 1 s before one arrives). @default a timer */
  readonly sleep?: Sleep
  /**
   * Connection attempts in a row that may fail (no answer, or 502/503/504)
   * before the iterator throws the last error. A connection that answered
   * resets the count. @default 10
   */
  readonly maxFailedConnects?: number
}

/** The default {@link Sleep}: a timer that an abort ends early. */
export const sleepFor: Sleep = (ms, signal) =>
  new Promise((resolve) => {
    if (signal?.aborted === true) {
      resolve()
      return
    }
    const done = (): void => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })

interface JournalEventsSource extends EventsOptions {
  readonly runId: string
  readonly path: string
  readonly sleep: Sleep
  readonly open: (path: string, headers: Record<string, string>, query: Record<string, string | number | undefined>, signal: AbortSignal) => Promise<Response>
}

const RETRYABLE_STATUSES = new Set([0, 502, 503, 504])
const DEFAULT_RETRY_MS = 1_000

/**
 * Reads a run's event stream as journal lines. Each connection sends the
 * `seq` of the last line yielded as `Last-Event-ID`, so a dropped connection
 * costs nothing: the server sends exactly the lines after it. A line at or
 * below that `seq` (which a correct server never sends) is skipped, so no
 * line is yielded twice. Ends after `run_end`, or when the server answers 204
 * (everything was sent already).
 */
export async function* journalEvents(source: JournalEventsSource): AsyncGenerator<JournalLine, void, undefined> {
  const stop = new AbortController()
  const onAbort = (): void => {
    stop.abort()
  }
  source.signal?.addEventListener('abort', onAbort, { once: true })
  if (source.signal?.aborted === true) stop.abort()
  // Read through a function: the caller may abort while this awaits, which narrowing cannot see.
  const stopped = (): boolean => stop.signal.aborted
  let last = source.after ?? -1
  let execution = source.execution
  let retryMs = DEFAULT_RETRY_MS
  let failedConnects = 0
  const maxFailedConnects = source.maxFailedConnects ?? 10
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
  try {
    for (;;) {
      if (stopped()) return
      let response: Response
      try {
        response = await source.open(source.path, last >= 0 ? { 'last-event-id': String(last) } : {}, { execution }, stop.signal)
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
      execution ??= response.headers.get('locus-execution-id') ?? undefined
      const pending: JournalLine[] = []
      const fault: { malformed?: Error } = {}
      const malformedEvent = (): Error | undefined => fault.malformed
      const parser = createParser({
        onEvent(message: EventSourceMessage) {
          let line: JournalLine
          try {
            line = JSON.parse(message.data) as JournalLine
          } catch (error) {
            fault.malformed = new LocusApiError(`The event stream of run "${source.runId}" sent an event whose data is not JSON (id ${message.id ?? 'none'}).`, {
              code: 'unexpected_response',
              status: 200,
              request: `GET ${source.path}`,
              cause: error,
            })
            return
          }
          pending.push(line)
        },
        onRetry(ms) {
          retryMs = ms
        },
      })
      reader = response.body.getReader()
      const decoder = new TextDecoder()
      let ended = false
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>
        try {
          chunk = await reader.read()
        } catch {
          break // dropped: reconnect below
        }
        if (chunk.done) {
          parser.feed(decoder.decode())
          break
        }
        parser.feed(decoder.decode(chunk.value, { stream: true }))
        const malformed = malformedEvent()
        if (malformed !== undefined) throw malformed
        for (const line of pending.splice(0)) {
          if (line.seq <= last) continue
          last = line.seq
          yield line
          if (line.type === 'run_end') {
            ended = true
            break
          }
          if (stopped()) return
        }
        if (ended) return
      }
      // The stream ended or dropped before run_end: only whole events were yielded, so `last` is where to pick up.
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
