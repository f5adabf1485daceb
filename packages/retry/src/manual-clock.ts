import { describeValue } from './describe-value.js'
import type { RetryClock } from './clock.js'
import { RetryOptionsError } from './retry-options-error.js'

/** A pending `sleep` on a {@link ManualClock}. */
export interface PendingSleep {
  /** The clock time at which it wakes. */
  readonly wakeAt: number
  /** How long it asked to sleep. */
  readonly ms: number
}

/**
 * A clock that moves only when a test moves it. Sleepers wake in time order,
 * and after each wake-up the promise callbacks it unblocks run before the
 * clock moves on, so a retry loop's next attempt and next backoff sleep are in
 * place before the following wake-up.
 */
export interface ManualClock extends RetryClock {
  /** Moves time forward by `ms`, waking every sleeper due by then in order. */
  advance(ms: number): Promise<void>
  /** Moves time forward to the next pending wake-up and wakes it; resolves `false` when nothing sleeps. */
  advanceToNextSleep(): Promise<boolean>
  /** Wakes sleepers one by one until none is left; resolves the milliseconds that passed. */
  runUntilIdle(maxWakeUps?: number): Promise<number>
  /** Lets pending promise callbacks run without moving time. */
  flush(): Promise<void>
  /** The sleeps waiting right now, earliest first. */
  pendingSleeps(): readonly PendingSleep[]
}

interface Sleeper extends PendingSleep {
  readonly order: number
  readonly wake: () => void
}

const flushOnce = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/**
 * Creates a {@link ManualClock} for tests: `now()` starts at `startMs` and
 * `sleep` waits until a test advances past its wake-up time (or its signal
 * aborts, which resolves it at once). Nothing sleeps for real.
 *
 * @param startMs the clock's first reading. @default 0
 * @example
 * ```ts
 * const clock = createManualClock()
 * const running = runWithRetry(operation, policy, { clock })
 * await clock.runUntilIdle()
 * const outcome = await running
 * ```
 */
export function createManualClock(startMs = 0): ManualClock {
  if (!Number.isFinite(startMs)) {
    throw new RetryOptionsError('startMs', `createManualClock: startMs must be a finite number, got ${describeValue(startMs)}`)
  }
  let current = startMs
  let order = 0
  const sleepers: Sleeper[] = []

  const earliest = (): Sleeper | undefined => {
    let found: Sleeper | undefined
    for (const sleeper of sleepers) {
      if (found === undefined || sleeper.wakeAt < found.wakeAt || (sleeper.wakeAt === found.wakeAt && sleeper.order < found.order)) {
        found = sleeper
      }
    }
    return found
  }

  const wake = (sleeper: Sleeper): void => {
    sleepers.splice(sleepers.indexOf(sleeper), 1)
    sleeper.wake()
  }

  const clock: ManualClock = {
    now: () => current,
    sleep(ms, signal) {
      return new Promise<void>((resolve) => {
        if (!(ms > 0) || signal?.aborted === true) {
          resolve()
          return
        }
        const onAbort = (): void => {
          const index = sleepers.indexOf(sleeper)
          if (index !== -1) sleepers.splice(index, 1)
          resolve()
        }
        const sleeper: Sleeper = {
          wakeAt: current + ms,
          ms,
          order: order++,
          wake: () => {
            signal?.removeEventListener('abort', onAbort)
            resolve()
          },
        }
        sleepers.push(sleeper)
        signal?.addEventListener('abort', onAbort, { once: true })
      })
    },
    async advance(ms) {
      if (!(Number.isFinite(ms) && ms >= 0)) {
        throw new RetryOptionsError('ms', `advance: ms must be a finite number >= 0, got ${describeValue(ms)}`)
      }
      const target = current + ms
      await flushOnce()
      for (let next = earliest(); next !== undefined && next.wakeAt <= target; next = earliest()) {
        current = Math.max(current, next.wakeAt)
        wake(next)
        await flushOnce()
      }
      current = target
      await flushOnce()
    },
    async advanceToNextSleep() {
      await flushOnce()
      const next = earliest()
      if (next === undefined) return false
      await clock.advance(Math.max(0, next.wakeAt - current))
      return true
    },
    async runUntilIdle(maxWakeUps = 10_000) {
      const started = current
      for (let wakeUps = 0; await clock.advanceToNextSleep(); wakeUps += 1) {
        if (wakeUps >= maxWakeUps) {
          throw new RetryOptionsError(
            'maxWakeUps',
            `runUntilIdle: something was still sleeping after ${maxWakeUps} wake-ups; raise maxWakeUps or look for a loop that never ends`,
          )
        }
      }
      return current - started
    },
    flush: flushOnce,
    pendingSleeps: () =>
      [...sleepers]
        .sort((left, right) => left.wakeAt - right.wakeAt || left.order - right.order)
        .map(({ wakeAt, ms }) => ({ wakeAt, ms })),
  }
  return clock
}
