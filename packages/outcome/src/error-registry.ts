import { LocusError } from './locus-error.js'

/**
 * What kind of ending an error code means, and so how every surface reports
 * it: the CLI's exit code, the server's HTTP status.
 *
 * - `usage`: the caller's input or options were wrong; nothing ran.
 * - `not-found`: the named run, execution or file does not exist.
 * - `conflict`: it exists already, or someone else owns it.
 * - `failure`: the work ran and failed (a run, a call, a group).
 * - `cancelled`: the work was stopped on request.
 * - `unavailable`: a disk, database or service could not be used.
 * - `internal`: a fault in Locus or something it could not classify.
 */
export const ERROR_KINDS = ['usage', 'not-found', 'conflict', 'failure', 'cancelled', 'unavailable', 'internal'] as const
export type ErrorKind = (typeof ERROR_KINDS)[number]

/** One code: which package throws it, and what kind of ending it is. */
export interface ErrorCodeEntry {
  readonly owner: string
  readonly kind: ErrorKind
}

const entries = <TCodes extends string>(owner: string, kind: ErrorKind, codes: readonly TCodes[]): Record<TCodes, ErrorCodeEntry> =>
  Object.fromEntries(codes.map((code) => [code, { owner, kind }])) as unknown as Record<TCodes, ErrorCodeEntry>

/**
 * Every stable error code of every Locus package, with its one owner. A test
 * holds each package's exported code lists to this table, so a code cannot be
 * owned twice and a new code cannot go unlisted.
 */
export const ERROR_CODE_REGISTRY = {
  ...entries('@locus/outcome', 'internal', ['UNKNOWN_ERROR']),
  ...entries('@locus/outcome', 'failure', ['WORKFLOW_RESULT_PREPARATION']),
  ...entries('@locus/groups', 'failure', ['WORKFLOW_GROUP_FAILURE', 'WORKFLOW_INVOCATION_CAP', 'WORKFLOW_RUN_DEADLINE']),
  ...entries('@locus/groups', 'cancelled', ['WORKFLOW_CANCELLED']),
  ...entries('@locus/groups', 'usage', ['GROUP_INVALID_INPUT']),
  ...entries('@locus/groups', 'internal', ['GROUP_OBSERVER_FAILED']),
  ...entries('@locus/retry', 'usage', ['RETRY_POLICY_INVALID', 'RETRY_OPTIONS_INVALID']),
  ...entries('@locus/retry', 'failure', ['CALL_FAILED']),
  ...entries('@locus/journal', 'usage', ['JOURNAL_WRITER_OPTIONS_INVALID', 'JOURNAL_LINE_INVALID', 'RUN_ID_INVALID', 'AGENT_RESULT_INVALID', 'ERROR_FACTORY_INVALID']),
  ...entries('@locus/journal', 'unavailable', ['JOURNAL_WRITE_FAILED', 'JOURNAL_READ_FAILED']),
  ...entries('@locus/journal', 'internal', ['JOURNAL_CLOSED']),
  ...entries('@locus/partial', 'usage', ['PARTIAL_INVALID_INPUT']),
  ...entries('@locus/partial', 'unavailable', ['OUTCOME_STORE_FAILURE']),
  ...entries('@locus/replay', 'usage', ['REPLAY_REQUEST_INVALID', 'REPLAY_RECORDING_INVALID', 'REPLAY_DUPLICATE_ORDINAL', 'REPLAY_ORDINAL_REPEATED', 'REPLAY_OPTIONS_INVALID']),
  ...entries('@locus/replay', 'unavailable', ['REPLAY_RECORDING_UNREADABLE']),
  ...entries('@locus/store', 'conflict', ['RUN_EXISTS', 'RUN_OWNED', 'EXECUTION_EXISTS', 'ARTIFACT_EXISTS']),
  ...entries('@locus/store', 'not-found', ['RUN_NOT_FOUND']),
  ...entries('@locus/store', 'conflict', ['LEASE_LOST']),
  ...entries('@locus/store', 'usage', ['ARTIFACT_KEY_INVALID', 'STORE_OPTIONS_INVALID']),
  ...entries('@locus/protocol', 'usage', ['PROTOCOL_MESSAGE_INVALID', 'PROTOCOL_HOST_OPTIONS_INVALID']),
  ...entries('@locus/runtime', 'failure', ['AGENT_CALL_FAILED', 'SCHEMA_VALIDATION', 'TOOL_CALL_FAILED', 'CHILD_WORKFLOW_FAILED']),
  ...entries('@locus/host-contract', 'failure', ['HOST_ERROR']),
  ...entries('@locus/runtime', 'usage', ['TRANSPORT_RETRY_REFUSED', 'UNKNOWN_TOOL', 'UNKNOWN_WORKFLOW', 'TOOL_INPUT_INVALID', 'RUN_OPTIONS_INVALID', 'WORKFLOW_INPUT_INVALID', 'WORKFLOW_DEFINITION_INVALID', 'SLEEP_DURATION_INVALID', 'SCHEDULE_INVALID', 'CONCURRENCY_KEY_INVALID', 'DEFERRED_TOOL_INVALID']),
  ...entries('@locus/runtime', 'conflict', ['RUN_COMPLETED']),
  ...entries('@locus/host-ai-sdk', 'usage', ['AI_SDK_HOST_OPTIONS_INVALID']),
  ...entries('@locus/cost', 'usage', ['PRICE_FILE_INVALID', 'COST_OPTIONS_INVALID']),
  ...entries('@locus/cli', 'usage', [
    'CLI_USAGE',
    'CLI_INPUT_INVALID',
    'RUN_NOTHING_RECORDED',
    'RUN_JOURNAL_DAMAGED',
    'HOST_OPTIONS_INVALID',
    'WORKFLOW_FILE_UNREADABLE',
    'WORKFLOW_EXPORT_MISSING',
    'WORKFLOW_SYNTAX_ERROR',
    'WORKFLOW_IMPORT_FAILED',
  ]),
  ...entries('@locus/cli', 'not-found', ['WORKFLOW_FILE_NOT_FOUND', 'SCHEDULE_NOT_FOUND']),
  ...entries('@locus/cli', 'conflict', ['INIT_FILE_EXISTS']),
  // A runs directory the CLI cannot write is the caller's to fix (another --runs-dir), like any usage mistake.
  ...entries('@locus/cli', 'usage', ['RUNS_DIR_NOT_WRITABLE']),
  // So is a full disk or a failing device (exit 2, never the 1 of a failed run or a diverged replay).
  ...entries('@locus/cli', 'usage', ['STORAGE_FAILED']),
  ...entries('@locus/cli', 'unavailable', ['OUTCOME_STORE_UNREADABLE']),
  // The HTTP server's own options (API keys, allowed hosts and origins, the port): the operator's to fix.
  ...entries('@locus/server', 'usage', ['SERVER_OPTIONS_INVALID']),
} as const satisfies Record<string, ErrorCodeEntry>

/** A registered error code. */
export type LocusErrorCode = keyof typeof ERROR_CODE_REGISTRY

/** The CLI exit code of each kind: 2 for anything the caller can fix before running, 1 for work that failed, 130 for a cancellation. */
export const EXIT_CODE_OF_KIND = {
  usage: 2,
  'not-found': 2,
  conflict: 2,
  failure: 1,
  cancelled: 130,
  unavailable: 1,
  internal: 1,
} as const satisfies Record<ErrorKind, number>

/** The HTTP status of each kind. */
export const HTTP_STATUS_OF_KIND = {
  usage: 400,
  'not-found': 404,
  conflict: 409,
  failure: 422,
  cancelled: 409,
  unavailable: 503,
  internal: 500,
} as const satisfies Record<ErrorKind, number>

/** The kind of any thrown value: a registered code's kind, or `internal` for anything else. */
export function errorKindOf(error: unknown): ErrorKind {
  if (!LocusError.isInstance(error)) return 'internal'
  const entry: ErrorCodeEntry | undefined = Object.hasOwn(ERROR_CODE_REGISTRY, error.code) ? ERROR_CODE_REGISTRY[error.code as LocusErrorCode] : undefined
  return entry?.kind ?? 'internal'
}

/** The exit code a command ends with when `error` ends it. */
export function exitCodeOfError(error: unknown): 1 | 2 | 130 {
  return EXIT_CODE_OF_KIND[errorKindOf(error)]
}

/** The HTTP status a server answers with when `error` ends a request. */
export function httpStatusOfError(error: unknown): number {
  return HTTP_STATUS_OF_KIND[errorKindOf(error)]
}
