import type { ErrorCode } from '@locus/outcome'
import type { CallFailure } from '@locus/retry'
import { parseRetryAfterMs } from './retry-after.js'

/** A failed LLM call in the seed's shape, with what the HTTP response said. */
export interface LlmFailure extends CallFailure {
  readonly code: ErrorCode
  /** The HTTP status, when the server answered at all. */
  readonly status?: number
  /** How long the server asked us to wait (`Retry-After`), in milliseconds. */
  readonly retryAfterMs?: number
}

// The AI SDK marks its errors with registered symbols so identity survives two installed copies; we read the same marks.
const API_CALL_ERROR_MARKER = Symbol.for('vercel.ai.error.AI_APICallError')
const AI_SDK_ERROR_MARKER = Symbol.for('vercel.ai.error')

interface ApiCallErrorShape {
  readonly message: string
  readonly statusCode?: number
  readonly responseHeaders?: Record<string, string>
  readonly isRetryable: boolean
  readonly cause?: unknown
}

function hasMarker(value: unknown, marker: symbol): boolean {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true
}

function isApiCallError(value: unknown): value is ApiCallErrorShape {
  return hasMarker(value, API_CALL_ERROR_MARKER)
}

const CONNECTION_ERROR_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'])

/** True when the thrown value, or something in its cause chain, is a lost or refused connection. */
function isConnectionFailure(thrown: unknown): boolean {
  const seen = new Set<unknown>()
  for (let current = thrown; typeof current === 'object' && current !== null && !seen.has(current); current = (current as { cause?: unknown }).cause) {
    seen.add(current)
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && CONNECTION_ERROR_CODES.has(code)) return true
    const message = (current as { message?: unknown }).message
    if (current instanceof TypeError && typeof message === 'string' && message.toLowerCase() === 'fetch failed') return true
  }
  return false
}

/** An error a server sent inside a stream of chunks (`data: {"error": {...}}`), as the AI SDK hands it on. */
interface StreamErrorShape {
  readonly message: string
  readonly type?: unknown
  readonly code?: unknown
}

function isStreamError(value: unknown): value is StreamErrorShape {
  return typeof value === 'object' && value !== null && !(value instanceof Error) && typeof (value as { message?: unknown }).message === 'string'
}

/**
 * An error object inside a 200 stream carries no HTTP status of its own; its
 * `code` (sometimes a status number) and `type` say what it was.
 */
function classifyStreamError(error: StreamErrorShape): LlmFailure {
  const code = typeof error.code === 'number' || typeof error.code === 'string' ? String(error.code) : undefined
  const type = typeof error.type === 'string' ? error.type : undefined
  const labels = [type, code].filter((label) => label !== undefined && label !== '').join(', ')
  const text = `the server reported an error inside the stream${labels === '' ? '' : ` (${labels})`}: ${error.message}`
  const statusLike = code !== undefined && /^[1-5]\d\d$/.test(code) ? Number(code) : undefined
  const words = `${type ?? ''} ${code ?? ''} ${error.message}`
  if (statusLike === 429 || /rate.?limit|too many requests/i.test(words)) return { error: text, code: 'rate_limited', retryable: true, cause: error }
  if (statusLike === 401 || statusLike === 403 || /invalid_api_key|authenticat|unauthori[sz]ed|permission|forbidden/i.test(words)) {
    return { error: text, code: 'refused', retryable: false, cause: error }
  }
  if ((statusLike !== undefined && statusLike >= 500) || /overloaded|server_error|service unavailable|unavailable|internal error/i.test(words)) {
    return { error: text, code: 'provider_error', retryable: true, cause: error }
  }
  return { error: text, code: 'provider_error', retryable: false, cause: error }
}

function messageOf(thrown: unknown): string {
  if (thrown instanceof Error) return thrown.message
  return typeof thrown === 'string' ? thrown : 'a non-error value was thrown'
}

/**
 * Classifies what one LLM call threw, following the retry policy of seed 001:
 *
 * | What happened | `code` | `retryable` |
 * | --- | --- | --- |
 * | HTTP 429 | `rate_limited` (with `retryAfterMs` from `Retry-After`) | yes |
 * | HTTP 5xx (with `retryAfterMs` when it sends `Retry-After`), a reset or refused connection | `provider_error` | yes |
 * | HTTP 401, 403 | `refused` | no |
 * | HTTP 402 | `budget_exceeded` | no |
 * | any other 4xx | `provider_error` | no |
 * | a 2xx body that is not valid JSON or not a chat completion | `provider_error` | no |
 * | an error object inside a 200 stream: rate limit (`code` 429, a `rate_limit` type) | `rate_limited` | yes |
 * | ... overloaded, server error, `code` 5xx | `provider_error` | yes |
 * | ... invalid API key, `code` 401/403 | `refused` | no |
 * | ... anything else | `provider_error` | no |
 * | anything else the SDK threw | `provider_error` | no |
 *
 * A per-attempt timeout is not seen here: `runWithRetry` stamps it
 * `deadline_exceeded` and retries it.
 *
 * @example
 * ```ts
 * classifyLlmError(new APICallError({ message: 'Too Many Requests', url, requestBodyValues: {}, statusCode: 429, responseHeaders: { 'retry-after': '7' } }))
 * // { error: 'HTTP 429: Too Many Requests', code: 'rate_limited', retryable: true, status: 429, retryAfterMs: 7000, cause }
 * ```
 */
export function classifyLlmError(thrown: unknown, wallNowMs: number = Date.now()): LlmFailure {
  if (isApiCallError(thrown)) {
    const status = thrown.statusCode
    if (status === undefined) {
      // No response at all: the SDK marks connection failures retryable.
      const retryable = thrown.isRetryable || isConnectionFailure(thrown)
      return { error: `no HTTP response: ${thrown.message}`, code: 'provider_error', retryable, cause: thrown }
    }
    const error = `HTTP ${status}: ${thrown.message}`
    if (status === 429) {
      const retryAfterMs = parseRetryAfterMs(thrown.responseHeaders, wallNowMs)
      return { error, code: 'rate_limited', retryable: true, status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }), cause: thrown }
    }
    if (status >= 500) {
      // A 503 may say when to come back, as a 429 does; the wait is then a floor under the backoff too.
      const retryAfterMs = parseRetryAfterMs(thrown.responseHeaders, wallNowMs)
      return { error, code: 'provider_error', retryable: true, status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }), cause: thrown }
    }
    if (status === 401 || status === 403) return { error, code: 'refused', retryable: false, status, cause: thrown }
    if (status === 402) return { error, code: 'budget_exceeded', retryable: false, status, cause: thrown }
    if (status >= 400) return { error, code: 'provider_error', retryable: false, status, cause: thrown }
    // A 2xx whose body could not be read as a chat completion (malformed JSON, a wrong shape).
    // A connection dropped while reading it is transient; a server that sends garbage is not.
    return { error, code: 'provider_error', retryable: isConnectionFailure(thrown.cause), status, cause: thrown }
  }
  if (isConnectionFailure(thrown)) return { error: `connection failed: ${messageOf(thrown)}`, code: 'provider_error', retryable: true, cause: thrown }
  if (isStreamError(thrown)) return classifyStreamError(thrown)
  const origin = hasMarker(thrown, AI_SDK_ERROR_MARKER) ? 'the AI SDK rejected the response' : 'the LLM call threw'
  return { error: `${origin}: ${messageOf(thrown)}`, code: 'provider_error', retryable: false, cause: thrown }
}
