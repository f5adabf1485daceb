import type { JournalLine } from '@locus/journal'

/** Called with each journal line, in `seq` order, once. */
export type LineListener = (line: JournalLine) => void

/** Where a subscriber starts: after this `seq`. @default -1, the whole journal */
export interface FeedCursor {
  readonly afterSeq?: number | undefined
}

/** What a subscriber is told besides its lines. */
export interface FeedHooks {
  /** Reading the stored history failed; no further line comes. */
  readonly onError?: ((error: unknown) => void) | undefined
  /** The subscriber has every stored line and gets each new one as it is written (a handle reading a store's tail cannot tell, and never calls it). */
  readonly onCaughtUp?: (() => void) | undefined
  /**
   * The execution ended and the subscriber has every line it wrote (its
   * `run_end`, or its last line when it stopped without one, as a suspended
   * execution does). Called once, after `onCaughtUp`.
   */
  readonly onEnd?: (() => void) | undefined
}

/** Where a late subscriber's history comes from. */
export interface LineFeedSource {
  /** Makes every line published so far readable by `readHistory`. */
  flush(): Promise<void>
  /** The stored lines after `afterSeq`, in order. */
  readHistory(afterSeq: number): AsyncIterable<JournalLine>
}

/**
 * The live journal of one execution, fanned out to subscribers. A subscriber
 * that joins late first gets the stored lines after its cursor, then the live
 * ones, with no gap and no duplicate: it is registered before history is
 * read, the lines that arrive meanwhile are held, and each line is delivered
 * only if its `seq` is past the last one delivered.
 */
export interface LineFeed {
  /** Hands a freshly written line to every subscriber. */
  publish(line: JournalLine): void
  /** Marks the end of the execution: live subscribers are told after their last line, and new ones get only history. */
  end(): void
  /** Delivers the lines after `cursor`, stored ones first, then each live one; `hooks` say when it is live and when the execution ended. */
  subscribe(listener: LineListener, cursor?: FeedCursor, hooks?: FeedHooks): () => void
  /** The same as an async iterable, which ends after `run_end` (or when the loop breaks). */
  events(cursor?: FeedCursor): AsyncIterable<JournalLine>
}

interface Subscriber {
  readonly listener: LineListener
  lastSeq: number
  /** Lines published while history was being read. */
  held: JournalLine[] | undefined
  closed: boolean
  readonly hooks: FeedHooks
}

/** Creates the feed of one execution. */
export function createLineFeed(source: LineFeedSource): LineFeed {
  const subscribers = new Set<Subscriber>()
  let ended = false

  function deliver(subscriber: Subscriber, line: JournalLine): void {
    if (subscriber.closed || line.seq <= subscriber.lastSeq) return
    subscriber.lastSeq = line.seq
    subscriber.listener(line)
  }

  function publish(line: JournalLine): void {
    for (const subscriber of subscribers) {
      if (subscriber.held !== undefined) subscriber.held.push(line)
      else deliver(subscriber, line)
    }
  }

  function subscribe(listener: LineListener, cursor: FeedCursor = {}, hooks: FeedHooks = {}): () => void {
    const subscriber: Subscriber = { listener, lastSeq: cursor.afterSeq ?? -1, held: [], closed: false, hooks }
    subscribers.add(subscriber)
    void (async () => {
      try {
        await source.flush()
        for await (const line of source.readHistory(subscriber.lastSeq)) {
          if (subscriber.closed) return
          deliver(subscriber, line)
        }
      } catch (error) {
        hooks.onError?.(error)
      } finally {
        const held = subscriber.held ?? []
        subscriber.held = undefined
        for (const line of held) deliver(subscriber, line)
        if (!subscriber.closed) {
          hooks.onCaughtUp?.()
          if (ended) hooks.onEnd?.()
        }
      }
    })()
    return () => {
      subscriber.closed = true
      subscribers.delete(subscriber)
    }
  }

  function end(): void {
    if (ended) return
    ended = true
    // A subscriber still reading history is told once it caught up.
    for (const subscriber of [...subscribers]) if (subscriber.held === undefined && !subscriber.closed) subscriber.hooks.onEnd?.()
  }

  function events(cursor: FeedCursor = {}): AsyncIterable<JournalLine> {
    return {
      [Symbol.asyncIterator]() {
        const queue: JournalLine[] = []
        let wake: (() => void) | undefined
        let failure: unknown
        let failed = false
        let sawEnd = false
        let endedHere = false
        const poke = (): void => {
          wake?.()
        }
        const unsubscribe = subscribe(
          (line) => {
            queue.push(line)
            if (line.type === 'run_end') sawEnd = true
            poke()
          },
          cursor,
          {
            onError: (error) => {
              failure = error
              failed = true
              poke()
            },
            onEnd: () => {
              endedHere = true
              poke()
            },
          },
        )
        const finish = (): IteratorResult<JournalLine> => {
          unsubscribe()
          return { value: undefined, done: true }
        }
        return {
          async next(): Promise<IteratorResult<JournalLine>> {
            for (;;) {
              const line = queue.shift()
              if (line !== undefined) return { value: line, done: false }
              if (failed) {
                finish()
                throw failure instanceof Error ? failure : new Error(String(failure))
              }
              // The journal is complete after run_end; an execution that ended without one is done once history is read.
              if (sawEnd || endedHere) return finish()
              await new Promise<void>((resolve) => {
                wake = resolve
              })
              wake = undefined
            }
          },
          return(): Promise<IteratorResult<JournalLine>> {
            return Promise.resolve(finish())
          },
        }
      },
    }
  }

  return { publish, end, subscribe, events }
}
