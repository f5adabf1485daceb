import { type FailureCause, type JsonValue, LocusError, type RunDisposition, hasLocusErrorCode } from '@locus/outcome'
import type { SerializedError } from '@locus/journal'
import type { AttemptRecord, CallFailure } from '@locus/retry'

/** Stable codes of the errors the runtime throws. */
export const RUNTIME_ERROR_CODES = [
  'AGENT_CALL_FAILED',
  'SCHEMA_VALIDATION',
  'TRANSPORT_RETRY_REFUSED',
  'TOOL_CALL_FAILED',
  'CHILD_WORKFLOW_FAILED',
  'UNKNOWN_TOOL',
  'UNKNOWN_WORKFLOW',
  'TOOL_INPUT_INVALID',
  'RUN_OPTIONS_INVALID',
  'WORKFLOW_INPUT_INVALID',
  'WORKFLOW_DEFINITION_INVALID',
  'RUN_COMPLETED',
  'SLEEP_DURATION_INVALID',
  'SCHEDULE_INVALID',
  'CONCURRENCY_KEY_INVALID',
  'DEFERRED_TOOL_INVALID',
] as const
export type RuntimeErrorCode = (typeof RUNTIME_ERROR_CODES)[number]

export interface AgentCallErrorDetails {
  readonly failureCause: FailureCause
  readonly callId: string
  readonly logicalCallId: string
  readonly attempt: number
  readonly attempts: number
  readonly agent: string
  readonly label?: string | undefined
  readonly phase?: string | undefined
  readonly cause?: unknown
}

/**
 * An `agent()` call failed. Thrown after the call's journal lines, transcript and
 * result envelope are written; `failureCause` is the same machine-readable cause
 * those records carry.
 */
export class AgentCallError extends LocusError {
  declare readonly code: 'AGENT_CALL_FAILED'
  readonly failureCause: FailureCause
  readonly callId: string
  readonly logicalCallId: string
  /** The attempt that ended the call. */
  readonly attempt: number
  /** The attempts the call declared. */
  readonly attempts: number
  readonly agent: string
  readonly label: string | undefined
  readonly phase: string | undefined

  constructor(message: string, details: AgentCallErrorDetails) {
    super(message, { code: 'AGENT_CALL_FAILED', cause: details.cause })
    this.name = 'AgentCallError'
    this.failureCause = details.failureCause
    this.callId = details.callId
    this.logicalCallId = details.logicalCallId
    this.attempt = details.attempt
    this.attempts = details.attempts
    this.agent = details.agent
    this.label = details.label
    this.phase = details.phase
  }

  static override isInstance(value: unknown): value is AgentCallError {
    return hasLocusErrorCode(value, 'AGENT_CALL_FAILED')
  }
}

/**
 * A `choice` call whose child answered outside the declared choices twice: once,
 * and again after its one same-session clarification turn.
 */
export class SchemaValidationError extends LocusError {
  declare readonly code: 'SCHEMA_VALIDATION'
  readonly failureCause: FailureCause = 'unparseable-answer'
  readonly choices: readonly string[]
  readonly answers: readonly string[]
  readonly callId: string
  readonly logicalCallId: string

  constructor(details: { choices: readonly string[]; answers: readonly string[]; callId: string; logicalCallId: string }) {
    super(
      `The agent answered ${details.answers.map((answer) => JSON.stringify(answer)).join(' and then ')}, ` +
        `but the call declared choice [${details.choices.map((choice) => JSON.stringify(choice)).join(', ')}]. ` +
        'Declare a choiceFallback to accept a default instead, or widen the choices.',
      { code: 'SCHEMA_VALIDATION' },
    )
    this.name = 'SchemaValidationError'
    this.choices = details.choices
    this.answers = details.answers
    this.callId = details.callId
    this.logicalCallId = details.logicalCallId
  }

  static override isInstance(value: unknown): value is SchemaValidationError {
    return hasLocusErrorCode(value, 'SCHEMA_VALIDATION')
  }
}

/**
 * A call bound to a worktree or workspace handle declared `attempts > 1`. A later
 * attempt would inherit the filesystem state of an earlier one, so the runtime
 * refuses before any attempt starts rather than silently running fewer.
 */
export class TransportRetryRefusedError extends LocusError {
  declare readonly code: 'TRANSPORT_RETRY_REFUSED'
  readonly attempts: number

  constructor(attempts: number, binding: string) {
    super(
      `attempts: ${attempts} was declared on a call bound to ${binding}; a retried attempt would inherit the first ` +
        "attempt's filesystem changes. Use attempts: 1 for workspace-bound calls, or run the call in the project workspace.",
      { code: 'TRANSPORT_RETRY_REFUSED' },
    )
    this.name = 'TransportRetryRefusedError'
    this.attempts = attempts
  }

  static override isInstance(value: unknown): value is TransportRetryRefusedError {
    return hasLocusErrorCode(value, 'TRANSPORT_RETRY_REFUSED')
  }
}

/** A `tool()` call ended in failure: terminal, out of attempts, or cancelled. */
export class ToolCallError extends LocusError {
  declare readonly code: 'TOOL_CALL_FAILED'
  readonly tool: string
  readonly toolCallId: string
  /** The failure that ended the call, in the seed's shape: `error`, `retryable`, `code`. */
  readonly failure: CallFailure
  readonly attempts: readonly AttemptRecord[]
  readonly stopReason: 'terminal' | 'exhausted' | 'cancelled'

  constructor(details: {
    tool: string
    toolCallId: string
    failure: CallFailure
    attempts: readonly AttemptRecord[]
    stopReason: 'terminal' | 'exhausted' | 'cancelled'
  }) {
    const tries = details.attempts.length === 1 ? '1 attempt' : `${details.attempts.length} attempts`
    super(`Tool "${details.tool}" failed after ${tries} (${details.stopReason}): ${details.failure.error}`, {
      code: 'TOOL_CALL_FAILED',
      cause: details.failure.cause,
    })
    this.name = 'ToolCallError'
    this.tool = details.tool
    this.toolCallId = details.toolCallId
    this.failure = details.failure
    this.attempts = details.attempts
    this.stopReason = details.stopReason
  }

  static override isInstance(value: unknown): value is ToolCallError {
    return hasLocusErrorCode(value, 'TOOL_CALL_FAILED')
  }
}

/** What a {@link ChildWorkflowError} says about the spawn that failed. */
export interface ChildWorkflowErrorDetails {
  readonly workflow: string
  readonly childCallId: string
  /** The execution of the attempt that ended the spawn; its journal and outputs tell the rest. */
  readonly childExecutionId: string
  readonly attempt: number
  /** The child run's disposition; `undefined` when it never ended (a timed-out attempt). */
  readonly disposition: RunDisposition | undefined
  /** The child's detached result (or failure envelope), when it ended. */
  readonly result: JsonValue | undefined
  /** What ended the child, when it failed by throwing. */
  readonly childError: SerializedError | undefined
  /** The seed-001 failure of the last attempt. */
  readonly failure: CallFailure
  readonly stopReason: 'terminal' | 'exhausted' | 'cancelled'
}

/**
 * A `spawn()` whose child workflow did not complete: it failed, was
 * cancelled, timed out, or returned a failure value (`ok: false`,
 * `partial: true`, a failed status). Thrown after the spawn's lines and the
 * child's own journal, `result.json` and outputs are written. Inside
 * `parallel()` or `pipeline()` it fails its slot like any failed call.
 */
export class ChildWorkflowError extends LocusError {
  declare readonly code: 'CHILD_WORKFLOW_FAILED'
  readonly workflow: string
  readonly childCallId: string
  readonly childExecutionId: string
  readonly attempt: number
  readonly disposition: RunDisposition | undefined
  readonly result: JsonValue | undefined
  readonly childError: SerializedError | undefined
  readonly failure: CallFailure
  readonly stopReason: 'terminal' | 'exhausted' | 'cancelled'

  constructor(details: ChildWorkflowErrorDetails) {
    const ended = details.disposition === undefined ? details.failure.error : `the child run ended ${details.disposition}${details.childError === undefined ? '' : `: ${details.childError.message}`}`
    super(`Child workflow "${details.workflow}" (${details.childCallId}, execution ${details.childExecutionId}) did not complete: ${ended}`, {
      code: 'CHILD_WORKFLOW_FAILED',
      cause: details.failure.cause,
    })
    this.name = 'ChildWorkflowError'
    this.workflow = details.workflow
    this.childCallId = details.childCallId
    this.childExecutionId = details.childExecutionId
    this.attempt = details.attempt
    this.disposition = details.disposition
    this.result = details.result
    this.childError = details.childError
    this.failure = details.failure
    this.stopReason = details.stopReason
  }

  static override isInstance(value: unknown): value is ChildWorkflowError {
    return hasLocusErrorCode(value, 'CHILD_WORKFLOW_FAILED')
  }
}

/** The codes {@link RuntimeInputError} owns; no other error class, here or in another package, uses them. */
const RUNTIME_INPUT_ERROR_CODES = [
  'UNKNOWN_TOOL',
  'UNKNOWN_WORKFLOW',
  'TOOL_INPUT_INVALID',
  'RUN_OPTIONS_INVALID',
  'WORKFLOW_INPUT_INVALID',
  'WORKFLOW_DEFINITION_INVALID',
  'SLEEP_DURATION_INVALID',
  'SCHEDULE_INVALID',
  'CONCURRENCY_KEY_INVALID',
  'DEFERRED_TOOL_INVALID',
] as const

/** Marks a {@link RuntimeInputError}; registered, so every installed copy of the package shares it. */
const RUNTIME_INPUT_ERROR_BRAND = Symbol.for('@locus/runtime:RuntimeInputError')

/** Input that a caller got wrong: options, workflow input, tool arguments, an unknown tool or workflow. */
export class RuntimeInputError extends LocusError {
  declare readonly code: Extract<RuntimeErrorCode, (typeof RUNTIME_INPUT_ERROR_CODES)[number]>
  /** Each problem as `field: what is wrong`. */
  readonly issues: readonly string[]
  private readonly [RUNTIME_INPUT_ERROR_BRAND] = true

  constructor(
    code: RuntimeInputError['code'],
    message: string,
    issues: readonly string[] = [],
    cause?: unknown,
  ) {
    super(message, { code, cause })
    this.name = 'RuntimeInputError'
    this.issues = issues
  }

  /**
   * True for a {@link RuntimeInputError} from any installed copy of this
   * package: it carries the class's brand and one of its codes. An error of
   * another class is never one, whatever its code.
   */
  static override isInstance(value: unknown): value is RuntimeInputError {
    return (
      LocusError.isInstance(value) &&
      (value as unknown as Record<symbol, unknown>)[RUNTIME_INPUT_ERROR_BRAND] === true &&
      (RUNTIME_INPUT_ERROR_CODES as readonly string[]).includes(value.code)
    )
  }
}

/**
 * A resume of a run whose latest execution completed: there is nothing left
 * to run, and nothing was written. Decided after the run was claimed (under
 * its ownership lock, or its lease), so of two resumes started together the
 * second sees the execution the first completed. `locus replay` checks that
 * a completed run still replays identically.
 */
export class RunCompletedError extends LocusError {
  declare readonly code: Extract<RuntimeErrorCode, 'RUN_COMPLETED'>
  readonly runId: string
  /** The execution that completed the run. */
  readonly executionId: string

  constructor(runId: string, executionId: string) {
    super(`Run "${runId}" already completed (execution ${executionId}); there is nothing to resume. \`locus replay ${runId}\` checks that it replays identically.`, {
      code: 'RUN_COMPLETED',
    })
    this.name = 'RunCompletedError'
    this.runId = runId
    this.executionId = executionId
  }

  static override isInstance(value: unknown): value is RunCompletedError {
    return hasLocusErrorCode(value, 'RUN_COMPLETED')
  }
}
