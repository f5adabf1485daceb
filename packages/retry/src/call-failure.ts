import { type ErrorCode, isErrorCode, toLocusError } from '@locus/outcome'
import { isCallError } from './call-error.js'

/**
 * A failed call in the seed's shape, as a worker reports it with `tool.error`
 * or `llm.error`: `error` says what happened, `retryable: true` allows a retry
 * (nothing else does), and `code` labels it without deciding anything.
 */
export interface CallFailure {
  /** What went wrong, for a person. */
  readonly error: string
  /** Only `true` lets the call be re-issued. */
  readonly retryable: boolean
  /** The seed's label; a timeout is always `deadline_exceeded`. */
  readonly code?: ErrorCode
  /** What was thrown, kept for diagnosis. */
  readonly cause?: unknown
}

function readField(value: object, key: string): unknown {
  try {
    return (value as Record<string, unknown>)[key]
  } catch {
    // A throwing getter or proxy trap: the field is unreadable, so it is absent.
    return undefined
  }
}

function messageOf(thrown: unknown): string {
  if (typeof thrown === 'object' && thrown !== null && !(thrown instanceof Error)) {
    // The seed's own failure shape: { error: 'upstream 503', retryable: true, code: 'provider_error' }.
    const error = readField(thrown, 'error')
    if (typeof error === 'string') return error
    const message = readField(thrown, 'message')
    if (typeof message === 'string') return message
  }
  try {
    return toLocusError(thrown).message
  } catch {
    return 'a value that cannot be described was thrown'
  }
}

/**
 * Reads the seed's failure shape from anything an operation threw or rejected
 * with: a {@link CallError}, any `Error` carrying `retryable` and `code`, a
 * plain `{ error, retryable, code }` object, or anything else.
 *
 * `retryable` is `true` only when the thrown value says exactly `retryable:
 * true`; a missing, truthy-but-not-true or unreadable flag is terminal. `code`
 * is kept only when it is one of the seed's `ErrorCode`s (an `ECONNRESET` is
 * not). Never throws.
 *
 * @example
 * ```ts
 * toCallFailure(Object.assign(new Error('upstream 503'), { retryable: true, code: 'provider_error' }))
 * // { error: 'upstream 503', retryable: true, code: 'provider_error', cause: <the error> }
 * ```
 */
export function toCallFailure(thrown: unknown): CallFailure {
  try {
    return readFailure(thrown)
  } catch {
    // A hostile proxy can throw from any trap; what it says cannot be trusted to allow a retry.
    return { error: 'an unreadable value was thrown', retryable: false, cause: thrown }
  }
}

function readFailure(thrown: unknown): CallFailure {
  const error = messageOf(thrown)
  if (typeof thrown !== 'object' || thrown === null) return { error, retryable: false, cause: thrown }
  const retryable = readField(thrown, 'retryable') === true
  const code = isCallError(thrown) ? readField(thrown, 'errorCode') : readField(thrown, 'code')
  return isErrorCode(code) ? { error, retryable, code, cause: thrown } : { error, retryable, cause: thrown }
}
