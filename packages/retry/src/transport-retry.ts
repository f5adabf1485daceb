import type { FailureCause } from '@locus/outcome'
import { describeValue } from './describe-value.js'
import { RetryPolicyError } from './retry-policy-error.js'
import type { RetryPolicy } from './retry-policy.js'

/**
 * The only agent failure causes the transport retry re-sends: the child never
 * got to answer because a timeout aborted it. Every other cause, `unclassified`
 * included, ends the call; promoting a cause onto this list is its own
 * evidenced change.
 */
export const TRANSPORT_RETRYABLE_CAUSES = ['host-turn-timeout', 'call-timeout'] as const satisfies readonly FailureCause[]

/** One of {@link TRANSPORT_RETRYABLE_CAUSES}. */
export type TransportRetryableCause = (typeof TRANSPORT_RETRYABLE_CAUSES)[number]

/**
 * True only for `host-turn-timeout` and `call-timeout`. Anything else,
 * including `unclassified`, a cause this package does not know, or a value
 * that is not a string, is not retried.
 *
 * @example
 * ```ts
 * isTransportRetryable('call-timeout')   // true
 * isTransportRetryable('provider-error') // false
 * ```
 */
export function isTransportRetryable(cause: FailureCause): cause is TransportRetryableCause {
  return cause === 'host-turn-timeout' || cause === 'call-timeout'
}

/**
 * Reads an `agent()` call's `attempts`: an integer >= 1 with no upper bound
 * (the author's count is honoured exactly, never lowered); undeclared
 * (`undefined`) means a single attempt.
 *
 * @throws {RetryPolicyError} with `field: 'attempts'` for anything else: `0`,
 *   `-1`, `2.5`, `NaN`, `Infinity`, `null`, `"2"`.
 * @example
 * ```ts
 * parseAttempts(undefined) // 1
 * parseAttempts(3)         // 3
 * ```
 */
export function parseAttempts(value: unknown): number {
  if (value === undefined) return 1
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1) return value
  const rule = typeof value === 'number' && value > Number.MAX_SAFE_INTEGER && value !== Infinity ? `at most ${Number.MAX_SAFE_INTEGER}` : 'an integer >= 1'
  throw new RetryPolicyError([{ field: 'attempts', message: `attempts must be ${rule}, got ${describeValue(value)}` }])
}

/**
 * The {@link RetryPolicy} of a transport retry: `attempts` tries in a row,
 * no backoff (the prompt is re-sent at once to a fresh child) and no
 * per-attempt timeout (the call's own `timeoutMs` and the host's turn budget
 * bound each attempt and report their own causes).
 *
 * @throws {RetryPolicyError} as {@link parseAttempts} does.
 * @example
 * ```ts
 * transportRetryPolicy(2) // { timeout_secs: null, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 }
 * ```
 */
export function transportRetryPolicy(attempts: unknown): RetryPolicy {
  return { timeout_secs: null, max_retries: parseAttempts(attempts), backoff_base_secs: 0, backoff_max_secs: 0 }
}
