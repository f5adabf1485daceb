import { StoreOptionsError } from './store-errors.js'

/** What a record of a run's token stream says: a piece of text, or that a request's text was thrown away, or that it ended. */
export const STREAM_RECORD_KINDS = ['delta', 'discarded', 'end'] as const
export type StreamRecordKind = (typeof STREAM_RECORD_KINDS)[number]

/** How long a run's token stream is kept after the run ends, by default: 7 days. */
export const DEFAULT_STREAM_RETENTION_MS = 7 * 24 * 60 * 60 * 1000

/**
 * Which LLM request a record belongs to: the execution that ran it, the
 * agent call (`callId`), the call's attempt, and the LLM attempt within that
 * attempt (1, 2, ... for each request the host sent, retries included).
 */
export interface StreamKey {
  readonly executionId: string
  readonly callId: string
  readonly attempt: number
  readonly llmAttempt: number
}

/** A record as the writer hands it over; the store gives it its offset. */
export interface StreamRecordInput extends StreamKey {
  readonly kind: StreamRecordKind
  /** The text of a `delta`. */
  readonly text?: string | undefined
  /** Why a `discarded` request's text was thrown away (a failure cause such as `call-timeout`, or `llm-retry`). */
  readonly cause?: string | undefined
}

/** One record of a run's token stream, at its gap-free offset (0, 1, 2, ... per run). */
export interface StreamRecord extends StreamRecordInput {
  readonly offset: number
}

/** How {@link RunStreams.read} reads. */
export interface StreamReadOptions {
  /** Only records whose offset is greater. @default -1 (from the first) */
  readonly after?: number | undefined
  /** At most this many. @default 1000 */
  readonly limit?: number | undefined
}

/** What {@link RunStreams.read} found. */
export interface StreamRead {
  /** Records after the offset asked for, in offset order, none below `firstKept`. */
  readonly records: readonly StreamRecord[]
  /** The first offset still kept; records below it were pruned. Equals `next` when everything was. */
  readonly firstKept: number
  /** The offset the next record will get. */
  readonly next: number
  /** When the run ended (epoch ms), once the runtime said so; retention counts from here. */
  readonly endedAt?: number | undefined
}

/** What {@link RunStreams.prune} removed. */
export interface StreamPruneResult {
  readonly runs: number
  readonly records: number
}

/**
 * The token streams of runs, behind the {@link RunStore} seam: the deltas of
 * each LLM request, appended in batches with a gap-free offset per run, read
 * after an offset, waited on, and pruned some time after the run ended.
 * Pruning removes stream records only, never a journal line.
 */
export interface RunStreams {
  /**
   * Appends records to a run's stream in one write, with the next offsets,
   * and returns them as kept. @throws RunNotFoundError for an unknown run,
   * StoreOptionsError for a record that is not one
   */
  append(runId: string, records: readonly StreamRecordInput[]): Promise<readonly StreamRecord[]>
  /** The records after `after`; an unknown run or one that never streamed reads empty. */
  read(runId: string, options?: StreamReadOptions): Promise<StreamRead>
  /**
   * Resolves once the run's stream holds a record after `after` (true), or
   * when `timeoutMs` passes or the signal aborts first (false).
   */
  wait(runId: string, after: number, options?: { readonly signal?: AbortSignal | undefined; readonly timeoutMs?: number | undefined }): Promise<boolean>
  /** Records that the run ended at `endedAt` (epoch ms): its stream is kept `streamRetention` from then. Idempotent; the first end counts. */
  end(runId: string, endedAt: number): Promise<void>
  /** Removes the records of every run that ended at least `streamRetention` before `now`; offsets stay where they were. */
  prune(now: number): Promise<StreamPruneResult>
}

/** Checks a `streamRetention` option (milliseconds, 0 or more). */
export function streamRetentionOf(where: string, value: number | undefined): number {
  const retention = value ?? DEFAULT_STREAM_RETENTION_MS
  if (!Number.isFinite(retention) || retention < 0) {
    throw new StoreOptionsError(`${where}: streamRetention must be a number of milliseconds, 0 or more, not ${String(value)}.`)
  }
  return retention
}

const positive = (value: unknown): boolean => typeof value === 'number' && Number.isSafeInteger(value) && value >= 1

/** The record, checked and with only its own fields; throws StoreOptionsError when it is not one. */
export function validateStreamRecordInput(record: StreamRecordInput): StreamRecordInput {
  const fail = (why: string): never => {
    throw new StoreOptionsError(`A stream record ${why}: ${JSON.stringify(record)}.`)
  }
  if (typeof record !== 'object') fail('must be an object')
  if (typeof record.executionId !== 'string' || record.executionId.length === 0) fail('needs its executionId')
  if (typeof record.callId !== 'string' || record.callId.length === 0) fail('needs its callId')
  if (!positive(record.attempt)) fail('needs an attempt of 1 or more')
  if (!positive(record.llmAttempt)) fail('needs an llmAttempt of 1 or more')
  if (!(STREAM_RECORD_KINDS as readonly string[]).includes(record.kind)) fail(`has kind "${record.kind}", not delta, discarded or end`)
  const base = { executionId: record.executionId, callId: record.callId, attempt: record.attempt, llmAttempt: record.llmAttempt }
  if (record.kind === 'delta') {
    if (typeof record.text !== 'string') fail('of kind delta needs its text')
    return { ...base, kind: 'delta', text: record.text }
  }
  if (record.kind === 'discarded') {
    if (typeof record.cause !== 'string' || record.cause.length === 0) fail('of kind discarded needs its cause')
    return { ...base, kind: 'discarded', cause: record.cause }
  }
  return { ...base, kind: 'end' }
}

/** The stream key of a record as one string, for maps. */
export function streamKeyOf(key: StreamKey): string {
  return `${key.executionId}\u0000${key.callId}\u0000${String(key.attempt)}\u0000${String(key.llmAttempt)}`
}

/** Clamps a read's `after` and `limit`. */
export function readBounds(options: StreamReadOptions | undefined): { after: number; limit: number } {
  const after = options?.after ?? -1
  const limit = options?.limit ?? 1000
  if (!Number.isSafeInteger(after) || after < -1) throw new StoreOptionsError(`A stream read's after must be an offset (-1 or more), not ${String(after)}.`)
  if (!Number.isSafeInteger(limit) || limit < 1) throw new StoreOptionsError(`A stream read's limit must be 1 or more, not ${String(limit)}.`)
  return { after, limit }
}

/** Wakes the in-process waiters of each run's stream. */
export class StreamWaiters {
  readonly #waiters = new Map<string, Set<() => void>>()

  wake(runId: string): void {
    const set = this.#waiters.get(runId)
    if (set === undefined) return
    for (const wake of [...set]) wake()
  }

  wakeAll(): void {
    for (const runId of [...this.#waiters.keys()]) this.wake(runId)
  }

  /** Resolves at the next wake of the run, after `ms`, or when the signal aborts; never rejects. */
  next(runId: string, ms: number | undefined, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted === true) return Promise.resolve()
    return new Promise((resolve) => {
      let set = this.#waiters.get(runId)
      if (set === undefined) this.#waiters.set(runId, (set = new Set()))
      const waiters = set
      const done = (): void => {
        if (timer !== undefined) clearTimeout(timer)
        waiters.delete(done)
        if (waiters.size === 0 && this.#waiters.get(runId) === waiters) this.#waiters.delete(runId)
        signal?.removeEventListener('abort', done)
        resolve()
      }
      const timer = ms === undefined ? undefined : setTimeout(done, Math.max(0, ms))
      waiters.add(done)
      signal?.addEventListener('abort', done, { once: true })
    })
  }
}

const aborted = (signal: AbortSignal | undefined): boolean => signal?.aborted === true

/**
 * `wait` for an adapter: reads, and when nothing is after `after`, waits for
 * a wake (or `pollMs`, for writers in other processes) and reads again.
 */
export async function waitForRecords(
  read: () => Promise<StreamRead>,
  after: number,
  next: (ms: number | undefined) => Promise<void>,
  options: { readonly signal?: AbortSignal | undefined; readonly timeoutMs?: number | undefined } | undefined,
  pollMs: number | undefined,
): Promise<boolean> {
  const now = Date.now
  const signal = options?.signal
  const deadline = options?.timeoutMs === undefined ? undefined : now() + options.timeoutMs
  for (;;) {
    // Register for the wake before reading, so an append between the read and the wait is not missed.
    const left = deadline === undefined ? undefined : deadline - now()
    const woken = next(left === undefined ? pollMs : pollMs === undefined ? left : Math.min(left, pollMs))
    const read_ = await read()
    if (read_.next > after + 1) return true
    if (signal?.aborted === true) return false
    if (deadline !== undefined && now() >= deadline) return false
    await woken
    if (aborted(signal)) return false
  }
}
