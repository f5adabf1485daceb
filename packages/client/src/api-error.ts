import { LocusError } from '@locus/outcome'

/**
 * The codes a Locus server answers errors with (a closed list: a new code is
 * a new API version), and two of the client's own: `unreachable` when no
 * answer came (connection refused, DNS, a reset before the headers) and
 * `unexpected_response` when the answer is not the API's error shape (a
 * proxy's HTML page, say).
 */
export const API_ERROR_CODES = [
  'invalid_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'stream_pruned',
  'callback_expired',
  'payload_too_large',
  'unsupported_media_type',
  'host_not_allowed',
  'idempotency_conflict',
  'run_terminal',
  'run_owned',
  'run_exists',
  'already_resolved',
  'conflict',
  'cancelled',
  'unprocessable',
  'unavailable',
  'shutting_down',
  'internal_error',
] as const
export type ApiErrorCode = (typeof API_ERROR_CODES)[number]
export type ClientErrorCode = ApiErrorCode | 'unreachable' | 'unexpected_response'

const LOCUS_API_ERROR_MARKER = Symbol.for('locus.error.LocusApiError')

/** What a request to a Locus server ended with when it did not succeed. */
export class LocusApiError extends LocusError {
  declare readonly code: ClientErrorCode
  /** The HTTP status; 0 when no answer came (`unreachable`). */
  readonly status: number
  /** Each problem as `field: what is wrong`, when the server listed them. */
  readonly issues: readonly string[]
  /** The request, as `METHOD /path`. */
  readonly request: string
  /** The server's id for the request (`x-request-id`), under which its log has the details; absent when no answer came. */
  readonly requestId: string | undefined
  /** With `stream_pruned` (410): the first offset of the run's token stream still kept; resume with `after: firstKept - 1`. */
  readonly firstKept: number | undefined
  private readonly [LOCUS_API_ERROR_MARKER] = true

  constructor(
    message: string,
    options: {
      code: ClientErrorCode
      status: number
      request: string
      issues?: readonly string[] | undefined
      requestId?: string | undefined
      firstKept?: number | undefined
      cause?: unknown
    },
  ) {
    super(message, { code: options.code, cause: options.cause })
    this.name = 'LocusApiError'
    this.status = options.status
    this.request = options.request
    this.issues = options.issues ?? []
    this.requestId = options.requestId
    this.firstKept = options.firstKept
  }

  /** True for a LocusApiError from any installed copy of this package. */
  static override isInstance(value: unknown): value is LocusApiError {
    return LocusError.isInstance(value) && (value as unknown as Record<symbol, unknown>)[LOCUS_API_ERROR_MARKER] === true
  }
}

/** Builds the error of a response that is not 2xx, from the API's `{ error: { code, message, issues?, requestId } }` body when it has one. */
export async function apiErrorOf(response: Response, request: string): Promise<LocusApiError> {
  const text = await response.text().catch(() => '')
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    body = undefined
  }
  const error = (body as { error?: { code?: unknown; message?: unknown; issues?: unknown; requestId?: unknown; firstKept?: unknown } } | undefined)?.error
  const requestId = typeof error?.requestId === 'string' ? error.requestId : (response.headers.get('x-request-id') ?? undefined)
  if (error !== undefined && typeof error.code === 'string' && (API_ERROR_CODES as readonly string[]).includes(error.code) && typeof error.message === 'string') {
    const issues = Array.isArray(error.issues) ? error.issues.filter((issue): issue is string => typeof issue === 'string') : undefined
    const firstKept = typeof error.firstKept === 'number' ? error.firstKept : undefined
    return new LocusApiError(error.message, { code: error.code as ApiErrorCode, status: response.status, request, issues, requestId, firstKept })
  }
  const excerpt = text.length > 200 ? `${text.slice(0, 200)}...` : text
  return new LocusApiError(
    `${request} answered ${response.status} without a Locus error body${excerpt.length > 0 ? `: ${excerpt}` : ''}; is the URL a Locus server (GET /healthz answers {"ok":true})?`,
    { code: 'unexpected_response', status: response.status, request, requestId },
  )
}
