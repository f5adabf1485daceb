import { type RetryClock, systemClock } from './clock.js'
import { describeValue } from './describe-value.js'
import { RetryOptionsError } from './retry-options-error.js'

/**
 * A pool of retries shared by many calls. `runWithRetry` asks it before each
 * retry (never before a first attempt); when it says no, the loop stops as
 * `exhausted` even though the policy allowed more attempts. Share one budget
 * across a fan-out so that one outage cannot turn a thousand calls into a
 * thousand retry loops. Implement it yourself to share across processes.
 */
export interface RetryBudget {
  /** Takes one retry from the budget; `false` when none is left. */
  tryWithdraw(): boolean
  /** Retries available right now (may be fractional while refilling). */
  available(): number
}

/** Settings of {@link createRetryBudget}. */
export interface RetryBudgetOptions {
  /** The most retries the budget holds, and what it starts with. @default 100 */
  readonly capacity?: number
  /** Retries added back per second, up to `capacity`; `0` never refills. @default 10 */
  readonly refillPerSecond?: number
  /** Where the refill reads time. @default systemClock */
  readonly clock?: RetryClock
}

function requireNumber(field: string, value: unknown, minimum: number, rule: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < minimum) {
    throw new RetryOptionsError(field, `createRetryBudget: ${field} must be ${rule}, got ${describeValue(value)}`)
  }
  return value
}

/**
 * Creates a token-bucket {@link RetryBudget}: it starts full with `capacity`
 * retries, each retry takes one, and it refills continuously at
 * `refillPerSecond`. First attempts never draw from it, so it throttles only
 * the extra load that retries add.
 *
 * @throws {RetryOptionsError} naming `capacity` or `refillPerSecond` when out of range.
 * @example
 * ```ts
 * const budget = createRetryBudget({ capacity: 20, refillPerSecond: 2 })
 * await Promise.all(urls.map((url) => runWithRetry(() => fetchPage(url), policy, { budget })))
 * ```
 */
export function createRetryBudget(options: RetryBudgetOptions = {}): RetryBudget {
  const capacity = requireNumber('capacity', options.capacity ?? 100, 1, 'a finite number >= 1')
  const refillPerSecond = requireNumber('refillPerSecond', options.refillPerSecond ?? 10, 0, 'a finite number >= 0')
  const clock = options.clock ?? systemClock
  let tokens = capacity
  let refilledAt = clock.now()

  const refill = (): void => {
    const now = clock.now()
    // A clock that steps backwards (an NTP correction) must not drain the budget.
    if (now > refilledAt) tokens = Math.min(capacity, tokens + ((now - refilledAt) / 1000) * refillPerSecond)
    refilledAt = now
  }

  return {
    tryWithdraw() {
      refill()
      if (tokens < 1) return false
      tokens -= 1
      return true
    },
    available() {
      refill()
      return tokens
    },
  }
}
