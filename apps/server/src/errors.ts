import { RUN_ID_INVALID } from '@locus/journal'
import { LocusError, type LocusErrorCode } from '@locus/outcome'
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
  'payload_too_large',
  'unsupported_media_type',
  'host_not_allowed',
  'idempotency_conflict',
  'run_terminal',
  'run_owned',
  'run_exists',
  'already_resolved',
  'shutting_down',
  'internal_error',
] as const
export type ServerErrorCode = (typeof SERVER_ERROR_CODES)[number]

/** The HTTP status of each code. */
export const STATUS_OF_CODE: Readonly<Record<ServerErrorCode, 400 | 401 | 403 | 404 | 409 | 413 | 415 | 500 | 503>> = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  payload_too_large: 413,
  unsupported_media_type: 415,
  host_not_allowed: 403,
  idempotency_conflict: 409,
  run_terminal: 409,
  run_owned: 409,
  run_exists: 409,
  already_resolved: 409,
  shutting_down: 503,
  internal_error: 500,
}

/**
 * The one table from the packages' error codes to the API's. Every error a
 * route lets through is looked up here; a code not listed is
 * `internal_error`. The codes are those of `ERROR_CODE_REGISTRY` in
 * @locus/outcome, and a client code's HTTP status is the one the registry
 * gives the code's kind (a test holds them together). The table cannot be
 * derived from the registry alone: a kind does not say which of the API's
 * 409 codes a conflict is (`run_exists` or `run_owned`), and a `usage` code
 * raised by the server's own configuration (a workflow definition, the
 * store's options) is the server's fault here, not the client's.
 */
export const PACKAGE_ERROR_TABLE = {
  // @locus/runtime: what a caller got wrong.
  WORKFLOW_INPUT_INVALID: 'invalid_request',
  RUN_OPTIONS_INVALID: 'invalid_request',
  TOOL_INPUT_INVALID: 'invalid_request',
  UNKNOWN_TOOL: 'invalid_request',
  // @locus/runtime: the server's own workflow is wrong, not the request.
  WORKFLOW_DEFINITION_INVALID: 'internal_error',
  // @locus/runtime: who owns a run (a taken run id is the store's RUN_EXISTS, below).
  RUN_OWNED: 'run_owned',
  // @locus/runtime: a resume of a run that completed (decided under the run's lock or lease).
  RUN_COMPLETED: 'run_terminal',
  // @locus/store
  RUN_EXISTS: 'run_exists',
  RUN_NOT_FOUND: 'not_found',
  STORE_OPTIONS_INVALID: 'internal_error',
  // @locus/journal
  [RUN_ID_INVALID]: 'invalid_request',
} as const satisfies Partial<Record<LocusErrorCode, ServerErrorCode>>

/** An error the API answers with: a code from {@link SERVER_ERROR_CODES}, a message for a person, and the problems one by one. */
export class ApiError extends Error {
  readonly code: ServerErrorCode
  readonly issues: readonly string[] | undefined
  /** Extra response headers, such as `WWW-Authenticate`. */
  readonly headers: Readonly<Record<string, string>>

  constructor(code: ServerErrorCode, message: string, options: { issues?: readonly string[] | undefined; headers?: Record<string, string>; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ApiError'
    this.code = code
    this.issues = options.issues
    this.headers = options.headers ?? {}
  }

  get status(): number {
    return STATUS_OF_CODE[this.code]
  }

  /**
   * The response body, with the request's id when given. The message and
   * issues leave without file system paths or command-line advice
   * (`clientMessage`); the log keeps them whole.
   */
  body(requestId?: string): { error: { code: ServerErrorCode; message: string; issues?: string[]; requestId?: string } } {
    return {
      error: {
        code: this.code,
        message: clientMessage(this.message),
        ...(this.issues === undefined ? {} : { issues: this.issues.map(clientMessage) }),
        ...(requestId === undefined ? {} : { requestId }),
      },
    }
  }
}

/**
 * Turns anything a route threw into an {@link ApiError} through
 * {@link PACKAGE_ERROR_TABLE}; `reported` is told about errors that are the
 * server's fault, whose details stay out of the response.
 */
export function toApiError(error: unknown, reported: (error: unknown) => void): ApiError {
  if (error instanceof ApiError) return error
  // The store's messages name its directory and the CLI's commands; a client gets the run id only.
  if (RunNotFoundError.isInstance(error) && typeof error.runId === 'string') return new ApiError('not_found', `No run "${error.runId}".`, { cause: error })
  if (RunExistsError.isInstance(error) && typeof error.runId === 'string') return new ApiError('run_exists', `Run "${error.runId}" exists already; a run id names one run, so start the new run with another id.`, { cause: error })
  if (LocusError.isInstance(error)) {
    const code = (PACKAGE_ERROR_TABLE as Readonly<Record<string, ServerErrorCode>>)[error.code]
    if (code !== undefined && code !== 'internal_error') {
      const issues = RuntimeInputError.isInstance(error) && error.issues.length > 0 ? error.issues : undefined
      return new ApiError(code, error.message, { issues, cause: error })
    }
  }
  reported(error)
  return new ApiError('internal_error', 'The server failed while answering; the error is in its log.', { cause: error })
}
