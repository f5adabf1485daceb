import type { RunRow, RunStreams, StreamRecord } from '@locus/store'
import { STREAM_END_CHECK_MS, streamComplete } from './stream-ending.js'

/** How many records one read of the store takes at most. */
const READ_LIMIT = 256

/** A connection following a run's token stream through a {@link TokenHub}. */
export interface TokenSubscriber {
  /** The offset of the last record this connection has; records after it are delivered. */
  readonly after: number
  /**
   * Records after `after`, in offset order, with no gap: the connection writes
   * them and moves `after` to the last one's offset before returning.
   */
  deliver(records: readonly StreamRecord[]): void
  /** The run ended and everything was delivered (`ended`), or records after `after` were pruned (`pruned`). */
  finish(outcome: 'ended' | 'pruned'): void
  /** Reading the store failed; the connection ends. */
  fail(error: unknown): void
}

/** One run's feed: a single reader of its stream, pushing each batch to every connection that is caught up. */
interface RunFeed {
  /** The last offset the feed has read. */
  after: number
  readonly subscribers: Set<TokenSubscriber>
  /** Wakes the feed's wait when its last subscriber leaves. */
  readonly stop: AbortController
}

/** What {@link createTokenHub} reads. */
export interface TokenHubOptions {
  readonly streams: Pick<RunStreams, 'read' | 'wait'>
  readonly readRow: (runId: string) => Promise<RunRow | undefined>
  readonly now?: (() => number) | undefined
}

/** Shares one reader per run among every connection to its token stream (see {@link createTokenHub}). */
export interface TokenHub {
  /**
   * Delivers the run's records after `subscriber.after` until the run ended
   * with everything delivered, records were pruned, or the returned function
   * is called (the connection went away). `knownEnd` is an offset the store
   * is known to have reached (a read's `next - 1`): a feed never starts past
   * it, so a connection that resumes beyond the end is never ahead of what a
   * later one needs.
   */
  follow(runId: string, subscriber: TokenSubscriber, knownEnd: number): () => void
  /** Runs with a feed now: for tests and the bench. */
  feeds(): number
}

/**
 * The token streams of a server, pushed: each run that has connections has
 * one feed, which reads the store after its last offset (one read, one row
 * read and one wait per batch, however many connections), and hands each
 * batch to every connection caught up with it, which writes it to its socket
 * right there. A connection that joins behind the feed first reads what it
 * lacks from the store itself, then joins the feed; one that joins ahead of
 * it (it resumes at an offset the feed has not read yet) is handed only the
 * records after its own. The store's writer never waits on a reader, and
 * neither does the feed: a connection that cannot keep up is the
 * connection's to drop.
 */
export function createTokenHub(options: TokenHubOptions): TokenHub {
  const { streams, readRow } = options
  const now = options.now ?? Date.now
  const feeds = new Map<string, RunFeed>()

  /** Hands a connection the records after its offset; false when it failed to take them (it is told, and goes). */
  const handTo = (subscriber: TokenSubscriber, records: readonly StreamRecord[]): boolean => {
    const after = subscriber.after
    const first = records[0]
    const last = records.at(-1)
    if (first === undefined || last === undefined || last.offset <= after) return true
    try {
      subscriber.deliver(first.offset > after ? records : records.filter((record) => record.offset > after))
      return true
    } catch (error) {
      // One connection's failure is its own: the feed goes on for the others.
      subscriber.fail(error)
      return false
    }
  }

  async function runFeed(runId: string, feed: RunFeed): Promise<void> {
    let endSeen = false
    try {
      while (feed.subscribers.size > 0) {
        // The row first: when it says the run ended, the read after it has every record.
        const row = await readRow(runId)
        const read = await streams.read(runId, { after: feed.after, limit: READ_LIMIT })
        if (read.firstKept > feed.after + 1) {
          // Records the feed had not read were pruned: every connection behind the new start learns it; any ahead goes on.
          const start = read.firstKept - 1
          for (const subscriber of [...feed.subscribers]) {
            if (subscriber.after < start) {
              feed.subscribers.delete(subscriber)
              subscriber.finish('pruned')
            }
          }
          feed.after = start
          continue
        }
        if (read.records.length > 0) {
          endSeen = false
          feed.after = read.records.at(-1)?.offset ?? feed.after
          for (const subscriber of [...feed.subscribers]) if (!handTo(subscriber, read.records)) feed.subscribers.delete(subscriber)
          continue
        }
        if (streamComplete(row, read, now())) {
          // Once more, so a batch that landed between the two reads above is not lost.
          if (endSeen) {
            for (const subscriber of [...feed.subscribers]) {
              feed.subscribers.delete(subscriber)
              subscriber.finish('ended')
            }
            return
          }
          endSeen = true
          continue
        }
        endSeen = false
        await streams.wait(runId, feed.after, { signal: feed.stop.signal, timeoutMs: STREAM_END_CHECK_MS })
      }
    } catch (error) {
      for (const subscriber of [...feed.subscribers]) {
        feed.subscribers.delete(subscriber)
        subscriber.fail(error)
      }
    } finally {
      if (feeds.get(runId) === feed) feeds.delete(runId)
    }
  }

  /**
   * Starts a feed for the run (at the subscriber's offset, or at `knownEnd`
   * when that is lower: the store holds nothing past it yet), or joins the
   * one there is when the subscriber is not behind it.
   */
  function join(runId: string, subscriber: TokenSubscriber, knownEnd: number): boolean {
    let feed = feeds.get(runId)
    if (feed === undefined) {
      feed = { after: Math.min(subscriber.after, knownEnd), subscribers: new Set([subscriber]), stop: new AbortController() }
      feeds.set(runId, feed)
      void runFeed(runId, feed)
      return true
    }
    if (feed.after > subscriber.after) return false
    feed.subscribers.add(subscriber)
    return true
  }

  return {
    follow(runId, subscriber, knownEnd) {
      // Read through a function: a leave may come while the catch-up below awaits.
      const state = { left: false }
      const left = (): boolean => state.left
      const leave = (): void => {
        if (state.left) return
        state.left = true
        const feed = feeds.get(runId)
        if (feed === undefined || !feed.subscribers.delete(subscriber)) return
        if (feed.subscribers.size === 0) {
          feeds.delete(runId)
          feed.stop.abort()
        }
      }
      if (join(runId, subscriber, knownEnd)) return leave
      // Behind the feed: read what it lacks from the store, then join once it has caught up with the feed.
      void (async () => {
        try {
          while (!left()) {
            const read = await streams.read(runId, { after: subscriber.after, limit: READ_LIMIT })
            if (left()) return
            if (read.firstKept > subscriber.after + 1) {
              state.left = true
              subscriber.finish('pruned')
              return
            }
            if (!handTo(subscriber, read.records)) {
              state.left = true
              return
            }
            // The feed is never past the store's end, so once this read is the end the feed is not ahead: it joins.
            if (!left() && join(runId, subscriber, read.next - 1)) return
          }
        } catch (error) {
          if (left()) return
          state.left = true
          subscriber.fail(error)
        }
      })()
      return leave
    },
    feeds: () => feeds.size,
  }
}
