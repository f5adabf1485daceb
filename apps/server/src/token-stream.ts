import type { RunRow, RunStreams, StreamRecord } from '@locus/store'
import type { Context } from 'hono'
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response'
import { z } from 'zod'
import { ApiError } from './errors.js'
import { type PushSink, type SseSink, openPushedSse, writeSse } from './sse-writer.js'
import { STREAM_END_CHECK_MS, streamComplete } from './stream-ending.js'
import { type TokenHub, type TokenSubscriber, createTokenHub } from './token-hub.js'
import { REQUEST_ID_HEADER } from './request-log.js'
import type { RouteContext } from './route-context.js'
import { RunIdSchema, TokenStreamQuerySchema, type TokenStreamRecordSchema } from './schemas.js'
import type { Env } from './server-options.js'

/** One record as `?format=raw` sends it. */
export type RawStreamRecord = z.infer<typeof TokenStreamRecordSchema>

/** How many records one read of the store takes at most. */
const READ_LIMIT = 256
/** @see CreateServerOptions.streamDrainTimeoutMs */
export const DEFAULT_STREAM_DRAIN_TIMEOUT_MS = 10_000

/** A store without token streams: every run's stream is empty. */
const NO_STREAMS: Pick<RunStreams, 'read' | 'wait'> = {
  read: () => Promise.resolve({ records: [], firstKept: 0, next: 0 }),
  wait: (_runId, _after, options) =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        resolve(false)
      }, options?.timeoutMs ?? STREAM_END_CHECK_MS)
      options?.signal?.addEventListener(
        'abort',
        () => {
          clearTimeout(timer)
          resolve(false)
        },
        { once: true },
      )
    }),
}

/** A record with exactly the fields of the raw format, in their order. */
export function rawRecordOf(record: StreamRecord): RawStreamRecord {
  return {
    offset: record.offset,
    executionId: record.executionId,
    callId: record.callId,
    attempt: record.attempt,
    llmAttempt: record.llmAttempt,
    kind: record.kind,
    ...(record.kind === 'delta' ? { text: record.text ?? '' } : {}),
    ...(record.kind === 'discarded' ? { cause: record.cause ?? 'unknown' } : {}),
  }
}

/** The frames of one stream connection: what it sends first, for each record, and last once the run has ended. */
export interface TokenStreamFrames {
  readonly contentHeaders: Readonly<Record<string, string>>
  start(): string
  record(record: StreamRecord): string
  /** The frames of a whole batch, when they do not depend on the connection: made once for every connection handed the same batch. */
  batch?(records: readonly StreamRecord[]): string
  finish(): string
}

/**
 * A record's raw frame, made once per record object: connections that share
 * a read ({@link sharedStreamReads}) hand the same records to every client,
 * so a thousand clients of one run share one serialisation of each.
 */
const rawFramesOf = new WeakMap<StreamRecord, string>()
function rawFrameOf(record: StreamRecord): string {
  let frame = rawFramesOf.get(record)
  if (frame === undefined) {
    frame = `id: ${String(record.offset)}\ndata: ${JSON.stringify(rawRecordOf(record))}\n\n`
    rawFramesOf.set(record, frame)
  }
  return frame
}

/** A batch's raw frames, made once per batch array: a feed hands the same array to every connection caught up with it. */
const rawBatchesOf = new WeakMap<readonly StreamRecord[], string>()
function rawBatchOf(records: readonly StreamRecord[]): string {
  let text = rawBatchesOf.get(records)
  if (text === undefined) {
    text = ''
    for (const record of records) text += rawFrameOf(record)
    rawBatchesOf.set(records, text)
  }
  return text
}

/** `?format=raw`: each record one event (`id:` its offset, `data:` the record); `event: done` once the run ended and everything was sent. */
export function rawFrames(): TokenStreamFrames {
  return {
    contentHeaders: {},
    start: () => '',
    record: rawFrameOf,
    batch: rawBatchOf,
    finish: () => 'event: done\ndata: {}\n\n',
  }
}

/** The text part id of an LLM request in the UI message stream. */
export function uiPartIdOf(record: Pick<StreamRecord, 'executionId' | 'callId' | 'attempt' | 'llmAttempt'>): string {
  return `${record.executionId}:${record.callId}:${record.attempt}:${record.llmAttempt}`
}

/**
 * The AI SDK's UI message stream protocol (`x-vercel-ai-ui-message-stream:
 * v1`): `start` (the message id is the run id), then for each LLM request a
 * `data-locus-attempt` part and a text part (`text-start`, `text-delta`,
 * `text-end`; the part's `providerMetadata.locus` names the request), a
 * `data-locus-discarded` part when its text was thrown away (the text part,
 * when still open, ends with `providerMetadata.locus.discarded: true`), and
 * `finish` with `[DONE]` once the run ended. Each record's last chunk carries
 * its offset as `id:`. A connection that starts mid-stream opens the text of a
 * request it joins late with its own `text-start`, so every chunk it sends is
 * one the AI SDK's reader takes.
 */
export function uiFrames(messageId: string): TokenStreamFrames {
  const seen = new Set<string>()
  const open = new Set<string>()
  const frame = (chunk: Record<string, unknown>): string => `data: ${JSON.stringify(chunk)}\n\n`
  return {
    contentHeaders: { 'x-vercel-ai-ui-message-stream': 'v1' },
    start: () => frame({ type: 'start', messageId }),
    record(record) {
      const id = uiPartIdOf(record)
      const key = { executionId: record.executionId, callId: record.callId, attempt: record.attempt, llmAttempt: record.llmAttempt }
      const chunks: Record<string, unknown>[] = []
      if (!seen.has(id)) {
        seen.add(id)
        chunks.push({ type: 'data-locus-attempt', id, data: { ...key, offset: record.offset } })
      }
      if (record.kind === 'delta') {
        if (!open.has(id)) {
          open.add(id)
          chunks.push({ type: 'text-start', id, providerMetadata: { locus: key } })
        }
        chunks.push({ type: 'text-delta', id, delta: record.text ?? '' })
      } else if (record.kind === 'end') {
        if (open.delete(id)) chunks.push({ type: 'text-end', id })
      } else {
        const cause = record.cause ?? 'unknown'
        if (open.delete(id)) chunks.push({ type: 'text-end', id, providerMetadata: { locus: { ...key, discarded: true, cause } } })
        chunks.push({ type: 'data-locus-discarded', id, data: { ...key, cause, offset: record.offset } })
      }
      // The offset goes on the record's last chunk: a client that resumes from it has every chunk of the record.
      return chunks.map((chunk, index) => (index === chunks.length - 1 ? `id: ${record.offset}\n${frame(chunk)}` : frame(chunk))).join('')
    },
    finish: () => `${frame({ type: 'finish' })}data: [DONE]\n\n`,
  }
}


/** How a run's token stream is followed. */
export interface FollowOptions {
  readonly streams: Pick<RunStreams, 'read' | 'wait'>
  readonly runId: string
  /** Records after this offset. */
  readonly after: number
  /** Reads the run's row (its status and last end). */
  readonly row: () => Promise<RunRow | undefined>
  readonly signal: AbortSignal
  readonly now?: () => number
}

/**
 * The run's records after `after`, in offset order, across its executions,
 * until the run has ended and everything was read (`ended`), records were
 * pruned under the reader (`pruned`: a reconnect learns where the stream now
 * starts), or the signal aborts (`stopped`). Waits while nothing is new; the
 * writer is never held back by it.
 */
export async function* followTokenStream(options: FollowOptions): AsyncGenerator<StreamRecord, 'ended' | 'pruned' | 'stopped', undefined> {
  const now = options.now ?? Date.now
  // Read through a function: the signal may abort while this generator waits at a yield.
  const aborted = (): boolean => options.signal.aborted
  let after = options.after
  let endSeen = false
  for (;;) {
    if (options.signal.aborted) return 'stopped'
    // The row first: when it says the run ended, the read after it has every record.
    const row = await options.row()
    const read = await options.streams.read(options.runId, { after, limit: READ_LIMIT })
    if (read.firstKept > after + 1) return 'pruned'
    if (read.records.length > 0) {
      endSeen = false
      for (const record of read.records) {
        yield record
        after = record.offset
        if (aborted()) return 'stopped'
      }
      continue
    }
    if (streamComplete(row, read, now())) {
      // Once more, so a batch that landed between the two reads above is not lost.
      if (endSeen) return 'ended'
      endSeen = true
      continue
    }
    endSeen = false
    await options.streams.wait(options.runId, after, { signal: options.signal, timeoutMs: STREAM_END_CHECK_MS })
  }
}

/** The part of Node's `ServerResponse` {@link writeTokenStream} uses. */
export type TokenStreamSink = SseSink

/** What {@link writeTokenStream} and {@link tokenStreamBody} need. */
export interface TokenStreamWriteOptions {
  /** The text to send, a piece at a time (frames, whole). */
  readonly pieces: AsyncIterator<string>
  readonly heartbeatMs: number
  readonly retryMs: number
  /** How long a piece may wait for the socket to drain before the client is dropped. */
  readonly drainTimeoutMs: number
  /** Ends the stream (the server shuts down). */
  readonly signal: AbortSignal
  /** Called once when the stream ends, for any reason. */
  readonly onClose: () => void
  /** Told about a client dropped for falling behind. */
  readonly onDrop?: (() => void) | undefined
  readonly onError: (error: unknown) => void
}

/**
 * A token stream written straight to a Node response ({@link writeSse}): one
 * `write` per piece; a client that takes nothing for `drainTimeoutMs` has
 * fallen behind and is dropped, and resumes from the last `id:` it read.
 */
export function writeTokenStream(sink: TokenStreamSink, headers: Record<string, string>, options: TokenStreamWriteOptions): void {
  writeSse(sink, headers, options)
}

const encoder = new TextEncoder()

/** The same stream as a `ReadableStream` body (`app.request`, runtimes other than Node): it pulls a piece when the reader wants one. */
export function tokenStreamBody(options: TokenStreamWriteOptions): ReadableStream<Uint8Array> {
  const state = { closed: false }
  let heartbeat: ReturnType<typeof setInterval> | undefined
  let onAbort: (() => void) | undefined
  const close = (): void => {
    if (state.closed) return
    state.closed = true
    if (heartbeat !== undefined) clearInterval(heartbeat)
    if (onAbort !== undefined) options.signal.removeEventListener('abort', onAbort)
    void options.pieces.return?.().catch(() => undefined)
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
        for (;;) {
          if (state.closed) return
          let next: IteratorResult<string>
          try {
            next = await options.pieces.next()
          } catch (error) {
            if (state.closed as boolean) return
            options.onError(error)
            close()
            controller.close()
            return
          }
          if (state.closed as boolean) return
          if (next.done === true) {
            close()
            controller.close()
            return
          }
          if (next.value.length === 0) continue
          controller.enqueue(encoder.encode(next.value))
          return
        }
      },
      cancel() {
        close()
      },
    },
    { highWaterMark: 16 },
  )
}

/** What {@link pushTokenStream} needs: the pulled stream's options but its pieces, and the run's feed instead. */
export interface PushedTokenStreamOptions extends Omit<TokenStreamWriteOptions, 'pieces'> {
  readonly hub: TokenHub
  readonly runId: string
  /** Records after this offset. */
  readonly after: number
  /** An offset the store is known to have reached (a read's `next - 1`). */
  readonly knownEnd: number
  readonly frames: TokenStreamFrames
}

/**
 * A token stream pushed to a Node response ({@link openPushedSse}): the
 * run's feed in `hub` hands each batch in, and its frames (for the raw
 * format, one string shared by every connection handed the same batch) go
 * to the socket in one `write`. A client whose socket has held frames it did
 * not take for `drainTimeoutMs` is dropped and resumes from the last `id:`
 * it read.
 */
export function pushTokenStream(sink: PushSink, headers: Record<string, string>, options: PushedTokenStreamOptions): void {
  const { frames } = options
  const stream = openPushedSse(sink, headers, options)
  if (stream.closed) return
  let drainTimer: ReturnType<typeof setTimeout> | undefined
  const drained = (): void => {
    clearTimeout(drainTimer)
    drainTimer = undefined
  }
  const write = (text: string): void => {
    if (stream.write(text) || stream.closed || drainTimer !== undefined) return
    drainTimer = setTimeout(() => {
      stream.drop()
    }, options.drainTimeoutMs)
    sink.once('drain', drained)
  }
  write(frames.start())
  const subscriber: TokenSubscriber & { after: number } = {
    after: options.after,
    deliver(records) {
      subscriber.after = records.at(-1)?.offset ?? subscriber.after
      if (frames.batch !== undefined) {
        write(frames.batch(records))
        return
      }
      let text = ''
      for (const record of records) text += frames.record(record)
      write(text)
    },
    finish(outcome) {
      if (outcome === 'ended') write(frames.finish())
      stream.end()
    },
    fail(error) {
      if (stream.closed) return
      options.onError(error)
      stream.end()
    },
  }
  const leave = options.hub.follow(options.runId, subscriber, options.knownEnd)
  stream.onClosing(() => {
    drained()
    sink.off('drain', drained)
    leave()
  })
}

/**
 * The store reads of every token stream this server serves, shared: a read,
 * a wait or a row read that another connection already asked for with the
 * same arguments, and that has not answered yet, answers this one too. A
 * thousand clients caught up on one run wake on the same write and ask the
 * same questions; without this each asks the store itself (on PostgreSQL,
 * three queries per client per batch). Joining a request under way loses
 * nothing: a read that missed a record written after it began is followed
 * by a wait, and a wait that began before the write is woken by it. A
 * connection's record read never joins one that began before its own row
 * read (`forConnection`), so "the row says ended, the read after it has
 * everything" still holds for each connection.
 */
export function sharedStreamReads(streams: Pick<RunStreams, 'read' | 'wait'>, readRow: (runId: string) => Promise<RunRow | undefined>): {
  forConnection(): { readonly streams: Pick<RunStreams, 'read' | 'wait'>; readonly row: (runId: string) => Promise<RunRow | undefined> }
} {
  const pending = new Map<string, { readonly since: number; readonly answer: Promise<unknown> }>()
  /** The answer of `key` asked at or after `notBefore`, asking the store only when none is under way. */
  const asked = <T>(key: string, ask: () => Promise<T>, notBefore = Number.NEGATIVE_INFINITY): { readonly since: number; readonly answer: Promise<T> } => {
    const current = pending.get(key)
    if (current !== undefined && current.since >= notBefore) return current as { readonly since: number; readonly answer: Promise<T> }
    const entry = { since: performance.now(), answer: ask() }
    pending.set(key, entry)
    void entry.answer
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        if (pending.get(key) === entry) pending.delete(key)
      })
    return entry
  }
  const once = <T>(key: string, ask: () => Promise<T>, notBefore?: number): Promise<T> => asked(key, ask, notBefore).answer
  const wait = (runId: string, after: number, options?: { readonly signal?: AbortSignal | undefined; readonly timeoutMs?: number | undefined }): Promise<boolean> => {
    // One wait for all who wait after the same offset; each stops on its own signal.
    const shared = once(`wait\n${runId}\n${String(after)}\n${String(options?.timeoutMs ?? '')}`, () => streams.wait(runId, after, { timeoutMs: options?.timeoutMs }))
    const signal = options?.signal
    if (signal === undefined) return shared
    if (signal.aborted) return Promise.resolve(false)
    return new Promise<boolean>((resolve, reject) => {
      const onAbort = (): void => {
        resolve(false)
      }
      signal.addEventListener('abort', onAbort, { once: true })
      shared.then(
        (value) => {
          signal.removeEventListener('abort', onAbort)
          resolve(value)
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onAbort)
          reject(error instanceof Error ? error : new Error(String(error)))
        },
      )
    })
  }
  return {
    forConnection() {
      let rowAskedAt = Number.NEGATIVE_INFINITY
      return {
        streams: {
          read: (runId, options) => once(`read\n${runId}\n${String(options?.after ?? -1)}\n${String(options?.limit ?? '')}`, () => streams.read(runId, options), rowAskedAt),
          wait,
        },
        row: (runId) => {
          // A row read already under way will do; the records read that follows must not have begun before it.
          const row = asked(`row\n${runId}`, () => readRow(runId))
          rowAskedAt = row.since
          return row.answer
        },
      }
    },
  }
}

/** The frames of a connection: `start`, each record's, and `finish` once the run ended with everything sent. */
async function* piecesOf(frames: TokenStreamFrames, records: AsyncGenerator<StreamRecord, 'ended' | 'pruned' | 'stopped', undefined>): AsyncGenerator<string, void, undefined> {
  try {
    yield frames.start()
    for (;;) {
      const next = await records.next()
      if (next.done === true) {
        if (next.value === 'ended') yield frames.finish()
        return
      }
      yield frames.record(next.value)
    }
  } finally {
    await records.return('stopped')
  }
}

/**
 * `GET /v1/runs/{id}/stream`: the run's token stream as server-sent events,
 * following the run across its executions. `id:` is the record's offset, and
 * `Last-Event-ID` (or `?after=`) resumes after it. 404 for a run that does not
 * exist, 410 `stream_pruned` (with `firstKept`) when records after the offset
 * were pruned, 204 when the run ended and the client has everything. The
 * same readers as the events route: a key with `runs:read`, or `?token=` from
 * POST /v1/runs/{id}/events-token.
 */
export function mountTokenStream(routes: RouteContext): void {
  const { app, runtime, state, parse, options } = routes
  const heartbeatMs = options.heartbeatMs ?? 15_000
  const retryMs = options.sseRetryMs ?? 2_000
  const drainTimeoutMs = options.streamDrainTimeoutMs ?? DEFAULT_STREAM_DRAIN_TIMEOUT_MS

  const streamGuard = async (c: Context<Env>, next: () => Promise<void>): Promise<void> => {
    const token = c.req.query('token')
    if (token === undefined) {
      await routes.guard('runs:read')(c, next)
      return
    }
    c.set('principal', routes.eventTokens.verify(token, c.req.param('id') ?? ''))
    await next()
  }

  const shared = sharedStreamReads(runtime.store.streams ?? NO_STREAMS, (runId) => runtime.store.readRunRow(runId))
  // Connections on Node are pushed to from one feed per run; the rest (app.request, other runtimes) pull their own.
  const hub = createTokenHub({ streams: runtime.store.streams ?? NO_STREAMS, readRow: (runId) => runtime.store.readRunRow(runId) })

  app.get('/v1/runs/:id/stream', streamGuard, async (c) => {
    const runId = parse(RunIdSchema, c.req.param('id'), 'id')
    const query = parse(TokenStreamQuerySchema, c.req.query(), 'query')
    const lastEventId = c.req.header('last-event-id')
    const after = lastEventId === undefined || lastEventId.trim() === '' ? (query.after ?? -1) : parse(z.coerce.number().int().min(-1), lastEventId.trim(), 'Last-Event-ID')
    const store = runtime.store
    if (!(await store.hasRun(runId))) throw new ApiError('not_found', `No run "${runId}".`)
    const reads = shared.forConnection()
    const streams = reads.streams
    const row = (): Promise<RunRow | undefined> => reads.row(runId)
    const current = await row()
    const first = await streams.read(runId, { after, limit: 1 })
    if (first.firstKept > after + 1) {
      throw new ApiError(
        'stream_pruned',
        `The token stream of run "${runId}" no longer holds the records after offset ${after}: they were pruned. It starts at offset ${first.firstKept} now; resume after ${first.firstKept - 1}.`,
        { firstKept: first.firstKept },
      )
    }
    // Read again before answering that nothing is left: a batch that landed between the row and the read is sent.
    if (first.records.length === 0 && streamComplete(current, first, Date.now()) && (await streams.read(runId, { after, limit: 1 })).records.length === 0) {
      return c.body(null, 204)
    }

    const frames = query.format === 'raw' ? rawFrames() : uiFrames(runId)
    const headers = {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Accel-Buffering': 'no',
      ...frames.contentHeaders,
      [REQUEST_ID_HEADER]: c.get('requestId'),
    }
    const outgoing = (c.env as { outgoing?: PushSink } | undefined)?.outgoing
    if (outgoing !== undefined) {
      state.openStreams += 1
      pushTokenStream(outgoing, headers, {
        hub,
        runId,
        after,
        knownEnd: first.next - 1,
        frames,
        heartbeatMs,
        retryMs,
        drainTimeoutMs,
        signal: state.shutdown.signal,
        onClose: () => {
          state.openStreams -= 1
        },
        onError: routes.report,
      })
      return RESPONSE_ALREADY_SENT
    }
    const stop = new AbortController()
    const records = followTokenStream({ streams, runId, after, row, signal: AbortSignal.any([stop.signal, state.shutdown.signal]) })
    state.openStreams += 1
    const writeOptions: TokenStreamWriteOptions = {
      pieces: piecesOf(frames, records),
      heartbeatMs,
      retryMs,
      drainTimeoutMs,
      signal: state.shutdown.signal,
      onClose: () => {
        state.openStreams -= 1
        stop.abort()
      },
      onError: routes.report,
    }
    return c.body(tokenStreamBody(writeOptions), 200, headers)
  })
}
