import { describeValue } from './describe-value.js'
import { RetryOptionsError } from './retry-options-error.js'
import type { RetryPolicy } from './retry-policy.js'

/**
 * How the backoff delay is spread out, as AWS describes in "Exponential
 * Backoff And Jitter":
 *
 * - `none`: the delay is exactly `min(base ** n, max)`, as the seed specifies.
 * - `full`: a uniform draw from `[0, delay)`; spreads a thundering herd the most.
 * - `equal`: `delay / 2` plus a uniform draw from `[0, delay / 2)`; never waits
 *   less than half the delay.
 */
export const JITTER_MODES = ['none', 'full', 'equal'] as const

/** One of {@link JITTER_MODES}. @default 'none' */
export type JitterMode = (typeof JITTER_MODES)[number]

/**
 * The delay in seconds before retry `n` (n = 1 before the second attempt,
 * 2 before the third, ...): `min(backoff_base_secs ** n, backoff_max_secs)`.
 * A base of 2 gives 2, 4, 8 seconds, capped at the ceiling; a base of 0
 * gives 0 (no wait).
 *
 * @throws {RetryOptionsError} when `n` is not an integer >= 1.
 * @example
 * ```ts
 * backoffDelaySecs(3, { timeout_secs: null, max_retries: 5, backoff_base_secs: 2, backoff_max_secs: 60 }) // 8
 * ```
 */
export function backoffDelaySecs(n: number, policy: RetryPolicy): number {
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new RetryOptionsError('n', `backoffDelaySecs: n must be the retry number, an integer >= 1, got ${describeValue(n)}`)
  }
  return Math.min(policy.backoff_base_secs ** n, policy.backoff_max_secs)
}

/** True when `value` is one of {@link JITTER_MODES}. */
export function isJitterMode(value: unknown): value is JitterMode {
  return value === 'none' || value === 'full' || value === 'equal'
}

/**
 * Spreads a backoff delay (in any unit) by the chosen {@link JitterMode}: the
 * result stays within `[0, delay]` for `full` and `[delay / 2, delay]` for
 * `equal`. `random` must
 * return a number in `[0, 1)`, as `Math.random` does; inject a seeded one in
 * tests.
 *
 * @throws {RetryOptionsError} for an unknown mode, or when `random` returns a value outside `[0, 1)`.
 * @example
 * ```ts
 * applyJitter(4, 'equal', () => 0.5) // 3: half of 4, plus half of the other half
 * ```
 */
export function applyJitter(delay: number, jitter: JitterMode, random: () => number = Math.random): number {
  if (jitter === 'none') return delay
  if (!isJitterMode(jitter)) {
    throw new RetryOptionsError('jitter', `jitter must be one of ${JITTER_MODES.join(', ')}, got ${describeValue(jitter)}`)
  }
  const draw = random()
  if (!(typeof draw === 'number' && draw >= 0 && draw < 1)) {
    throw new RetryOptionsError('random', `random() must return a number in [0, 1), as Math.random does, got ${describeValue(draw)}`)
  }
  // The min() guards subnormal delays, where halving rounds and the sum could exceed the delay itself.
  return jitter === 'full' ? draw * delay : Math.min(delay, delay / 2 + draw * (delay / 2))
}
