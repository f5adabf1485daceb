import { type ErrorCode, LocusError, hasLocusErrorCode, isErrorCode } from '@locus/outcome'
import { describeValue } from './describe-value.js'
import { RetryOptionsError } from './retry-options-error.js'

export const CALL_FAILED = 'CALL_FAILED'

/** What a {@link CallError} carries besides its message. */
export interface CallErrorOptions {
  /** Whether the call may be re-issued. Only `true` retries. */
  readonly retryable: boolean
  /** The seed's label for the failure; it never decides whether the call retries. */
  readonly code?: ErrorCode | undefined
  /** The underlying error, kept for diagnosis. */
  readonly cause?: unknown
}

/**
 * A failed tool or LLM call, in the seed's terms: `retryable` decides whether
 * it is re-issued and `errorCode` labels it (`provider_error`,
 * `rate_limited`, ...).
 *
 * How its codes relate: like every Locus error, `code` is the stable Locus
 * code, always `CALL_FAILED`, so `hasLocusErrorCode(error, 'CALL_FAILED')`
 * recognises it. The seed's lowercase label lives in `errorCode` and is what
 * {@link toCallFailure} reports as the failure's `code`.
 *
 * An operation does not need this class: any thrown `Error` (or plain object)
 * with `retryable: true` and a seed `code` is read the same way.
 *
 * @example
 * ```ts
 * throw new CallError('upstream 503', { retryable: true, code: 'provider_error' })
 * ```
 */
export class CallError extends LocusError {
  declare readonly code: typeof CALL_FAILED
  /** Whether the call may be re-issued. */
  readonly retryable: boolean
  /** The seed's label, as `provider_error`; `undefined` when unlabelled. */
  readonly errorCode: ErrorCode | undefined

  constructor(message: string, options: CallErrorOptions) {
    super(message, { code: CALL_FAILED, cause: options.cause })
    if (typeof options.retryable !== 'boolean') {
      throw new RetryOptionsError('retryable', `CallError: retryable must be true or false, got ${describeValue(options.retryable)}`)
    }
    if (options.code !== undefined && !isErrorCode(options.code)) {
      throw new RetryOptionsError('code', `CallError: code must be an ErrorCode (provider_error, rate_limited, refused, budget_exceeded, deadline_exceeded) or undefined, got ${describeValue(options.code)}`)
    }
    this.name = 'CallError'
    this.retryable = options.retryable
    this.errorCode = options.code
  }

  /** True for a {@link CallError} from any installed copy of this package. */
  static override isInstance(value: unknown): value is CallError {
    return isCallError(value)
  }
}

/** True for a {@link CallError} from any installed copy of this package. */
export function isCallError(value: unknown): value is CallError {
  return hasLocusErrorCode(value, CALL_FAILED)
}
