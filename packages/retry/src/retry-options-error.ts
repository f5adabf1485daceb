import { LocusError, hasLocusErrorCode } from '@locus/outcome'

export const RETRY_OPTIONS_INVALID = 'RETRY_OPTIONS_INVALID'

/**
 * An argument passed in code broke a rule: an unknown jitter mode, a budget
 * with a negative capacity, a retry number of 0 for `backoffDelaySecs`, an
 * operation that is not a function. The message names the argument, the value
 * received and what it must be.
 *
 * @example
 * ```ts
 * createRetryBudget({ capacity: -1 }) // throws RetryOptionsError, field 'capacity'
 * ```
 */
export class RetryOptionsError extends LocusError {
  declare readonly code: typeof RETRY_OPTIONS_INVALID
  /** The argument or option at fault, as `jitter` or `capacity`. */
  readonly field: string

  constructor(field: string, message: string, cause?: unknown) {
    super(message, { code: RETRY_OPTIONS_INVALID, cause })
    this.name = 'RetryOptionsError'
    this.field = field
  }

  /** True for a {@link RetryOptionsError} from any installed copy of this package. */
  static override isInstance(value: unknown): value is RetryOptionsError {
    return isRetryOptionsError(value)
  }
}

/** True for a {@link RetryOptionsError} from any installed copy of this package. */
export function isRetryOptionsError(value: unknown): value is RetryOptionsError {
  return hasLocusErrorCode(value, RETRY_OPTIONS_INVALID)
}
