import { ERROR_CODE_REGISTRY, type ErrorCodeEntry, type ErrorKind, LocusError, type LocusErrorCode } from '@locus/outcome'
import { RuntimeInputError } from '@locus/runtime'
import { RunExistsError, RunNotFoundError } from '@locus/store'
import { clientMessage } from './redact.js'

/**
 * The closed list of error codes the API answers with, in the body
 * `{ "error": { "code", "message", "issues"? } }`. A client may switch on
 * them; a new code is a new API version.
 */
export const SERVER_ERROR_CODES = [
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
export type ServerErrorCode = (typeof SERVER_ERROR_CODES)[number]

/** The HTTP status of each code. */
export const STATUS_OF_CODE: Readonly<Record<ServerErrorCode, 400 | 401 | 403 | 404 | 409 | 410 | 413 | 415 | 422 | 500 | 503>> = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  stream_pruned: 410,
  callback_expired: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  host_not_allowed: 403,
  idempotency_conflict: 409,
  run_terminal: 409,
  run_owned: 409,
  run_exists: 409,
  already_resolved: 409,
  conflict: 409,
  cancelled: 409,
  unprocessable: 422,
  unavailable: 503,
  shutting_down: 503,
  internal_error: 500,
}

/**
 * The API code of each kind of `ERROR_CODE_REGISTRY` (@locus/outcome): a
 * package error answers with its kind's code, at the status the registry
 * gives the kind (`HTTP_STATUS_OF_KIND`; a test holds them together), unless
 * {@link API_CODE_OVERRIDES} names it.
 */
export const API_CODE_OF_KIND = {
  usage: 'invalid_request',
  'not-found': 'not_found',
  conflict: 'conflict',
  failure: 'unprocessable',
  cancelled: 'cancelled',
  unavailable: 'unavailable',
  internal: 'internal_error',
} as const satisfies Record<ErrorKind, ServerErrorCode>

/**
 * The package codes that do not answer with their kind's API code. A
 * conflict that has a code of its own in the API (a run id that is taken, a
 * run another process owns, a resume of a run that completed) answers with
 * it, at the same 409. A `usage` code about the server's own configuration
 * (its workflows, store, journal writer, hosts, prices, retry policies, its
 * own options) is the server's fault, not the request's: 500
 * `internal_error`, logged, with no detail in the answer.
 */
export const API_CODE_OVERRIDES = {
  RUN_EXISTS: 'run_exists',
  RUN_OWNED: 'run_owned',
  RUN_COMPLETED: 'run_terminal',
  WORKFLOW_DEFINITION_INVALID: 'internal_error',
  STORE_OPTIONS_INVALID: 'internal_error',
  SERVER_OPTIONS_INVALID: 'internal_error',
  JOURNAL_WRITER_OPTIONS_INVALID: 'internal_error',
  JOURNAL_LINE_INVALID: 'internal_error',
  PROTOCOL_HOST_OPTIONS_INVALID: 'internal_error',
  AI_SDK_HOST_OPTIONS_INVALID: 'internal_error',
  COST_OPTIONS_INVALID: 'internal_error',
  PRICE_FILE_INVALID: 'internal_error',
  RETRY_POLICY_INVALID: 'internal_error',
  RETRY_OPTIONS_INVALID: 'internal_error',
} as const satisfies Partial<Record<LocusErrorCode, ServerErrorCode>>

/** The API code a registered package code answers with; `internal_error` for a code the registry does not list. */
export function apiCodeOf(code: string): ServerErrorCode {
  if (Object.hasOwn(API_CODE_OVERRIDES, code)) return API_CODE_OVERRIDES[code as keyof typeof API_CODE_OVERRIDES]
  const entry: ErrorCodeEntry | undefined = Object.hasOwn(ERROR_CODE_REGISTRY, code) ? ERROR_CODE_REGISTRY[code as LocusErrorCode] : undefined
  return entry === undefined ? 'internal_error' : API_CODE_OF_KIND[entry.kind]
}

/** An error the API answers with: a code from {@link SERVER_ERROR_CODES}, a message for a person, and the problems one by one. */
export class ApiError extends Error {
  readonly code: ServerErrorCode
  readonly issues: readonly string[] | undefined
  /** Extra response headers, such as `WWW-Authenticate`. */
  readonly headers: Readonly<Record<string, string>>
  /** With `stream_pruned`: the first offset of the token stream still kept. */
  readonly firstKept: number | undefined

  constructor(
    code: ServerErrorCode,
    message: string,
    options: { issues?: readonly string[] | undefined; headers?: Record<string, string>; cause?: unknown; firstKept?: number | undefined } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ApiError'
    this.code = code
    this.issues = options.issues
    this.headers = options.headers ?? {}
    this.firstKept = options.firstKept
  }

  get status(): number {
    return STATUS_OF_CODE[this.code]
  }

  /**
   * The response body, with the request's id when given. The message and
   * issues leave without file system paths or command-line advice
   * (`clientMessage`); the log keeps them whole.
   */
  body(requestId?: string): { error: { code: ServerErrorCode; message: string; issues?: string[]; requestId?: string; firstKept?: number } } {
    return {
      error: {
        code: this.code,
        message: clientMessage(this.message),
        ...(this.issues === undefined ? {} : { issues: this.issues.map(clientMessage) }),
        ...(requestId === undefined ? {} : { requestId }),
        ...(this.firstKept === undefined ? {} : { firstKept: this.firstKept }),
      },
    }
  }
}

/**
 * Turns anything a route threw into an {@link ApiError}: a registered package
 * code through {@link apiCodeOf}, anything else `internal_error`.
 * `reported` is told about errors that are the server's fault (every 5xx),
 * whose details stay out of an `internal_error` response.
 */
export function toApiError(error: unknown, reported: (error: unknown) => void): ApiError {
  if (error instanceof ApiError) return error
  // The store's messages name its directory and the CLI's commands; a client gets the run id only.
  if (RunNotFoundError.isInstance(error) && typeof error.runId === 'string') return new ApiError('not_found', `No run "${error.runId}".`, { cause: error })
  if (RunExistsError.isInstance(error) && typeof error.runId === 'string') return new ApiError('run_exists', `Run "${error.runId}" exists already; a run id names one run, so start the new run with another id.`, { cause: error })
  const code = LocusError.isInstance(error) ? apiCodeOf(error.code) : 'internal_error'
  if (code !== 'internal_error') {
    if (STATUS_OF_CODE[code] >= 500) reported(error)
    const message = (error as LocusError).message
    const issues = RuntimeInputError.isInstance(error) && error.issues.length > 0 ? error.issues : undefined
    return new ApiError(code, message, { issues, cause: error })
  }
  reported(error)
  return new ApiError('internal_error', 'The server failed while answering; the error is in its log.', { cause: error })
}
