import type { JournalLine } from '@locus/journal'
import type { FeedCursor, FeedHooks } from '@locus/runtime'
import { servedOnce } from './redact.js'
import { type PushSink, type SseSink, openPushedSse, writeSse } from './sse-writer.js'

/** What {@link journalEventStream} needs. */
export interface JournalEventStreamOptions {
  /** The lines to send, in `seq` order; subscribed before this is called, so nothing falls between history and live lines. */
  readonly lines: AsyncIterator<JournalLine>
  /** A comment line this often keeps proxies from closing an idle stream. */
  readonly heartbeatMs: number
  /** Sent as the stream's `retry:` field: how long a client waits before reconnecting. */
  readonly retryMs: number
  /** Ends the stream (the server is shutting down). */
  readonly signal: AbortSignal
  /** Called once when the stream ends for any reason: its last line, a disconnect, the signal, an error. */
  readonly onClose: () => void
  /** Told about an error reading the lines; the stream then ends. */
  readonly onError: (error: unknown) => void
  /**
   * The stream follows a run across its executions (`?follow=run`): each
   * event's id names its execution (`<executionId>:<seq>`), and a `run_end`
   * does not end the stream (a resume may follow); it ends when `lines` do.
   */
  readonly acrossExecutions?: boolean | undefined
}

const encoder = new TextEncoder()

/** One journal line as a server-sent event: `id:` its seq, `event:` its type, `data:` the line. */
export function sseFrame(line: JournalLine): string {
  // JSON.stringify never writes a raw newline, so the line is one `data:` field.
  return `id: ${line.seq}\nevent: ${line.type}\ndata: ${JSON.stringify(line)}\n\n`
}

/** A line's event id when a stream follows a run across its executions: the execution, then the seq. */
export function runEventId(line: JournalLine): string {
  return `${line.executionId}:${line.seq}`
}

/** One journal line as a server-sent event of a stream that follows the run across its executions. */
export function runSseFrame(line: JournalLine): string {
  return `id: ${runEventId(line)}\nevent: ${line.type}\ndata: ${JSON.stringify(line)}\n\n`
}

/**
 * The encoded frame of a line, made once per line object: a live feed hands
 * every subscriber the same object, so a thousand streams of one run share
 * one serialisation instead of making a thousand.
 */
const encodedFrames = new WeakMap<JournalLine, Uint8Array>()
const encodedRunFrames = new WeakMap<JournalLine, Uint8Array>()
function encodedFrame(line: JournalLine, acrossExecutions = false): Uint8Array {
  const frames = acrossExecutions ? encodedRunFrames : encodedFrames
  let frame = frames.get(line)
  if (frame === undefined) {
    frame = encoder.encode(acrossExecutions ? runSseFrame(line) : sseFrame(line))
    frames.set(line, frame)
  }
  return frame
}

/**
 * A `text/event-stream` body of journal lines. It pulls one line at a time
 * (a slow client holds the reader back, not the server's memory), writes a
 * heartbeat comment every `heartbeatMs`, and ends after `run_end`. When the
 * client goes away the stream is cancelled: the line iterator is returned
 * (which unsubscribes) and nothing else happens to the run.
 */
export function journalEventStream(options: JournalEventStreamOptions): ReadableStream<Uint8Array> {
  // Read through a function, so that a check after an await sees a close made meanwhile.
  const state = { closed: false }
  const isClosed = (): boolean => state.closed
  let heartbeat: ReturnType<typeof setInterval> | undefined
  let onAbort: (() => void) | undefined

  function close(): void {
    if (state.closed) return
    state.closed = true
    if (heartbeat !== undefined) clearInterval(heartbeat)
    if (onAbort !== undefined) options.signal.removeEventListener('abort', onAbort)
    // Unsubscribes a live feed; wakes and ends a store tail.
    void options.lines.return?.().catch(() => undefined)
    options.onClose()
  }

  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controller.enqueue(encoder.encode(`retry: ${options.retryMs}\n\n`))
        heartbeat = setInterval(() => {
          if (!state.closed) controller.enqueue(encoder.encode(': heartbeat\n\n'))
        }, options.heartbeatMs)
        heartbeat.unref()
        onAbort = () => {
          if (state.closed) return
          close()
          controller.close()
        }
        if (options.signal.aborted) onAbort()
        else options.signal.addEventListener('abort', onAbort, { once: true })
      },
      async pull(controller) {
        if (state.closed) return
        let next: IteratorResult<JournalLine>
        try {
          next = await options.lines.next()
        } catch (error) {
          if (isClosed()) return
          options.onError(error)
          close()
          controller.close()
          return
        }
        if (isClosed()) return
        if (next.done === true) {
          close()
          controller.close()
          return
        }
        controller.enqueue(encodedFrame(next.value, options.acrossExecutions === true))
        if (next.value.type === 'run_end' && options.acrossExecutions !== true) {
          close()
          controller.close()
        }
      },
      cancel() {
        close()
      },
    },
    { highWaterMark: 16 },
  )
}

/** The part of Node's `ServerResponse` {@link writeJournalEvents} uses. */
export type EventSink = SseSink

/** The frames of `lines`, ending after `run_end` unless they follow the run across executions; returning them returns the lines (which unsubscribes). */
function framesOf(lines: AsyncIterator<JournalLine>, acrossExecutions: boolean): AsyncIterator<Uint8Array> {
  let ended = false
  const done = { done: true as const, value: undefined }
  return {
    async next() {
      if (ended) return done
      const next = await lines.next()
      if (next.done === true) return done
      if (next.value.type === 'run_end' && !acrossExecutions) ended = true
      return { done: false, value: encodedFrame(next.value, acrossExecutions) }
    },
    async return() {
      await lines.return?.()
      return done
    },
  }
}

/**
 * The stream of {@link journalEventStream}, written straight to a Node
 * response ({@link writeSse}): one `write` per line, the socket's
 * backpressure holding the reader back (after a `write` that returns false
 * the next line waits for `drain`), and the stream ends after `run_end`.
 */
export function writeJournalEvents(sink: EventSink, headers: Record<string, string>, options: JournalEventStreamOptions): void {
  writeSse(sink, headers, { ...options, pieces: framesOf(options.lines, options.acrossExecutions === true) })
}

/** How often a stored execution's stream, idle, asks whether the execution ended some other way. */
export const END_CHECK_MS = 500

/**
 * Ends a stored execution's line iterator once its end is known from another
 * source than its `run_end` line (`ended`: its `result.json`, a later
 * execution), so a stream of a run whose `run_end` was torn by a crash still
 * ends. While lines come, nothing is checked; after `checkMs` without one,
 * `ended()` is asked, and once it says yes the iterator waits one more
 * `checkMs` for lines still on their way (the tail polls), then ends.
 */
export function endWhenEnded(lines: AsyncIterator<JournalLine>, ended: () => Promise<boolean>, checkMs = END_CHECK_MS): AsyncIterator<JournalLine> {
  let pending: Promise<IteratorResult<JournalLine>> | undefined
  let finished = false
  let endKnown = false
  const idle = (): Promise<undefined> =>
    new Promise((resolve) => {
      setTimeout(() => {
        resolve(undefined)
      }, checkMs).unref()
    })
  const finish = (): IteratorResult<JournalLine> => {
    finished = true
    pending = undefined
    // Not awaited: a tail's generator finishes its pending read first, which ends when the stream's close aborts it.
    void lines.return?.().catch(() => undefined)
    return { done: true, value: undefined }
  }
  return {
    async next() {
      if (finished) return { done: true, value: undefined }
      pending ??= lines.next()
      for (;;) {
        const current = pending
        const next = await Promise.race([current.then((result) => ({ result })), idle()])
        if (next !== undefined) {
          pending = undefined
          if (next.result.done === true) finished = true
          return next.result
        }
        if (endKnown) return finish()
        endKnown = await ended().catch(() => false)
      }
    },
    return() {
      if (!finished) finish()
      return Promise.resolve({ done: true, value: undefined })
    },
  }
}

/** The part of a live run handle {@link pushJournalEvents} uses: `RunHandle.subscribe`. */
export interface LineSubscription {
  subscribe(listener: (line: JournalLine) => void, cursor: FeedCursor, hooks: FeedHooks): () => void
}

/** The part of Node's `ServerResponse` {@link pushJournalEvents} uses. */
export type { PushSink } from './sse-writer.js'

/** What {@link pushJournalEvents} needs. */
export interface PushedEventStreamOptions {
  /** The live execution whose lines are sent, after `cursor`. */
  readonly source: LineSubscription
  readonly cursor: FeedCursor
  readonly heartbeatMs: number
  readonly retryMs: number
  /**
   * Once live, a client whose connection holds more than this many bytes
   * unsent has fallen behind: it is disconnected (its buffer goes with it)
   * and resumes with `Last-Event-ID` from the last event it read, so a slow
   * reader never holds back the run or the other subscribers.
   */
  readonly maxBufferedBytes: number
  /** Ends the stream (the server is shutting down). */
  readonly signal: AbortSignal
  /** Called once when the stream ends, for any reason. */
  readonly onClose: () => void
  /** Told about a client dropped for falling behind. */
  readonly onDrop?: (() => void) | undefined
  /** Told about an error reading the execution's stored lines; the stream then ends. */
  readonly onError: (error: unknown) => void
}

/**
 * The event stream of an execution this process runs, pushed: the run's line
 * feed calls in with each line as it is written, and the line's one encoded
 * frame (shared by every subscriber, redacted once) is written to the socket
 * right there, with no iterator, promise or stream reader per subscriber in
 * between. Lines written before the client came (its history after the
 * cursor) are delivered first by the feed, in order, with no gap or
 * duplicate. A `run_end` ends the stream, and so does the end of an
 * execution that stopped without one (suspended). Backpressure is a bound,
 * not a wait: the writer never waits for a reader (see `maxBufferedBytes`).
 */
export function pushJournalEvents(sink: PushSink, headers: Record<string, string>, options: PushedEventStreamOptions): void {
  let live = false
  let limit = options.maxBufferedBytes
  const stream = openPushedSse(sink, headers, options)
  if (stream.closed) return
  const unsubscribe = options.source.subscribe(
    (line) => {
      if (!stream.write(encodedFrame(servedOnce(line))) && stream.closed) return
      if (line.type === 'run_end') stream.end()
      else if (live && sink.writableLength > limit) stream.drop()
    },
    options.cursor,
    {
      onCaughtUp: () => {
        // History goes out without the bound (a client may start at the beginning of a long run); from here on the reader
        // must keep up, with what history left unsent as its allowance.
        limit = Math.max(options.maxBufferedBytes, sink.writableLength)
        live = true
      },
      onEnd: () => {
        stream.end()
      },
      onError: (error) => {
        if (stream.closed) return
        options.onError(error)
        stream.end()
      },
    },
  )
  // Unsubscribes when the stream closes, or at once when the subscription already ended it (a history that was all there was).
  stream.onClosing(unsubscribe)
}
