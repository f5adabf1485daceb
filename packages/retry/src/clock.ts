/**
 * Where `runWithRetry` reads time and waits. Inject one to test deadlines and
 * backoff without sleeping for real ({@link createManualClock}).
 *
 * Contract for `sleep`: it settles once `ms` milliseconds have passed on this
 * clock, and promptly when `signal` aborts. On abort it may resolve or reject;
 * `runWithRetry` checks the signal afterwards either way. The built-in clocks
 * resolve. A sleep of 0 ms or less (or `NaN`) settles at once.
 */
export interface RetryClock {
  /** Milliseconds on this clock's own scale; the system clock uses `Date.now()`. */
  now(): number
  /** Waits `ms` milliseconds, or until `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>
}

/** Node caps one timer at 2^31 - 1 ms (about 24.8 days) and fires at once beyond it; longer sleeps are chained. */
export const LONGEST_TIMER_MS = 2_147_483_647

function systemSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (!(ms > 0) || signal?.aborted === true) {
      resolve()
      return
    }
    let remaining = ms
    let timer: ReturnType<typeof setTimeout> | undefined
    const onAbort = (): void => {
      clearTimeout(timer)
      resolve()
    }
    const arm = (): void => {
      const step = Math.min(remaining, LONGEST_TIMER_MS)
      remaining -= step
      timer = setTimeout(() => {
        if (remaining > 0) {
          arm()
          return
        }
        signal?.removeEventListener('abort', onAbort)
        resolve()
      }, step)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    arm()
  })
}

/**
 * The real clock: `Date.now()` and `setTimeout`. Its sleep resolves early
 * (never rejects) when the signal aborts and clears its timer, so nothing is
 * left holding the process open. Sleeps longer than Node's timer limit are
 * chained; `Infinity` sleeps until aborted.
 */
export const systemClock: RetryClock = Object.freeze({
  now: (): number => Date.now(),
  sleep: systemSleep,
})
