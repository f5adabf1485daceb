import type { RunStreams, StreamKey, StreamRecordInput } from './stream-store.js'
import { streamKeyOf } from './stream-store.js'
import { LeaseLostError, RunNotFoundError, StoreOptionsError } from './store-errors.js'

/** Options of {@link createStreamWriter}. */
export interface StreamWriterOptions {
  /** The least time between two writes of the stream, in milliseconds. @default 50 */
  readonly batchMs?: number | undefined
  /** The clock batches are timed by. @default Date.now */
  readonly now?: (() => number) | undefined
  /** Runs `fire` after `ms`; returns a cancel. @default setTimeout */
  readonly schedule?: ((fire: () => void, ms: number) => () => void) | undefined
  /** Told about a write that failed; its records are lost, the run goes on. @default ignored */
  readonly onError?: ((error: unknown) => void) | undefined
}

/**
 * Writes one run's token stream: `delta`, `discarded` and `end` are queued
 * and written in batches, at most one write per `batchMs`, the first at once;
 * `flush` writes what is queued now. A request that was discarded or ended
 * takes no more deltas. A failed write is tried again twice (it wrote
 * nothing, so no offset is skipped or repeated), then its records are given
 * up: a failed write never fails the run, the stream is a view for people
 * watching, the journal is the record.
 */
export interface StreamWriter {
  readonly runId: string
  delta(key: StreamKey, text: string): void
  /** Closes the request's text as thrown away; also after its `end`, when the attempt that made it was thrown away. */
  discard(key: StreamKey, cause: string): void
  end(key: StreamKey): void
  /** The requests that streamed and are not discarded, to discard when their attempt fails. */
  openKeys(filter: (key: StreamKey) => boolean): StreamKey[]
  /** Writes everything queued; resolves when it is kept. */
  flush(): Promise<void>
  /** How many writes the store was asked for so far. */
  readonly writes: number
}

/** How many times a batch whose write failed is tried again before its records are given up. */
const WRITE_RETRIES = 2

/** A {@link StreamWriter} over a store's {@link RunStreams}. */
export function createStreamWriter(streams: RunStreams, runId: string, options: StreamWriterOptions = {}): StreamWriter {
  const batchMs = options.batchMs ?? 50
  const now = options.now ?? Date.now
  const schedule =
    options.schedule ??
    ((fire: () => void, ms: number) => {
      const timer = setTimeout(fire, ms)
      return () => {
        clearTimeout(timer)
      }
    })
  let queued: StreamRecordInput[] = []
  let lastWriteAt = Number.NEGATIVE_INFINITY
  let inFlight: Promise<void> | undefined
  let cancelTimer: (() => void) | undefined
  let writes = 0
  /** Each request that streamed: whether it ended, or was discarded (then it takes nothing more). */
  const states = new Map<string, { key: StreamKey; state: 'open' | 'ended' | 'discarded' }>()

  const write = (): Promise<void> => {
    cancelTimer?.()
    cancelTimer = undefined
    if (queued.length === 0) return inFlight ?? Promise.resolve()
    const batch = queued
    queued = []
    lastWriteAt = now()
    writes += 1
    const previous = inFlight ?? Promise.resolve()
    const current: Promise<void> = previous
      .then(() => appendRetrying(batch))
      .then(
        () => undefined,
        (error: unknown) => {
          options.onError?.(error)
        },
      )
      .finally(() => {
        if (inFlight === current) inFlight = undefined
      })
    inFlight = current
    return current
  }

  /**
   * One batch, tried again after a failed write (a connection the server
   * closed under a stalled process, a restart): an append that failed wrote
   * nothing, so a retry neither skips nor repeats an offset. Later batches
   * wait behind it, so the stream keeps its order.
   */
  const appendRetrying = async (batch: readonly StreamRecordInput[]): Promise<void> => {
    for (let retry = 0; ; retry += 1) {
      try {
        await streams.append(runId, batch)
        return
      } catch (error) {
        if (retry >= WRITE_RETRIES || RunNotFoundError.isInstance(error) || StoreOptionsError.isInstance(error) || LeaseLostError.isInstance(error)) throw error
        await new Promise<void>((resolve) => schedule(resolve, batchMs * (retry + 1)))
      }
    }
  }

  const arm = (): void => {
    if (cancelTimer !== undefined) return
    const wait = lastWriteAt + batchMs - now()
    if (wait <= 0) {
      void write()
      return
    }
    cancelTimer = schedule(() => {
      cancelTimer = undefined
      void write()
    }, wait)
  }

  const stateOf = (key: StreamKey): { key: StreamKey; state: 'open' | 'ended' | 'discarded' } => {
    const id = streamKeyOf(key)
    let entry = states.get(id)
    if (entry === undefined) states.set(id, (entry = { key: { executionId: key.executionId, callId: key.callId, attempt: key.attempt, llmAttempt: key.llmAttempt }, state: 'open' }))
    return entry
  }

  return {
    runId,
    get writes() {
      return writes
    },
    delta(key, text) {
      if (text.length === 0) return
      const entry = stateOf(key)
      if (entry.state !== 'open') return
      queued.push({ ...entry.key, kind: 'delta', text })
      arm()
    },
    discard(key, cause) {
      const entry = stateOf(key)
      if (entry.state === 'discarded') return
      entry.state = 'discarded'
      queued.push({ ...entry.key, kind: 'discarded', cause })
      void write()
    },
    end(key) {
      const entry = stateOf(key)
      if (entry.state !== 'open') return
      entry.state = 'ended'
      queued.push({ ...entry.key, kind: 'end' })
      void write()
    },
    openKeys(filter) {
      const keys: StreamKey[] = []
      for (const entry of states.values()) if (entry.state !== 'discarded' && filter(entry.key)) keys.push(entry.key)
      return keys
    },
    flush: () => write(),
  }
}
