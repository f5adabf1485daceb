import { LocusError, hasLocusErrorCode } from '@locus/outcome'

export const WORKFLOW_RUN_DEADLINE = 'WORKFLOW_RUN_DEADLINE'

/** The deadline the run had and how long it had run when it was observed. */
export interface WorkflowRunDeadlineDetails {
  /** The run's deadline, in milliseconds from its start. */
  readonly deadlineMs: number
  /** Milliseconds elapsed when the deadline was observed. */
  readonly elapsedMs: number
  /** An underlying error, if any. */
  readonly cause?: unknown
}

/**
 * The run passed its deadline. A hard, run-level failure with the same group
 * semantics as {@link WorkflowInvocationCapError}: queued dispatch stops across
 * the active group tree, started branches settle, and groups reject with this
 * same object, unwrapped.
 *
 * @example
 * ```ts
 * throw new WorkflowRunDeadlineError({ deadlineMs: 60_000, elapsedMs: 60_012 })
 * ```
 */
export class WorkflowRunDeadlineError extends LocusError {
  declare readonly code: typeof WORKFLOW_RUN_DEADLINE
  /** The run's deadline in milliseconds. */
  readonly deadlineMs: number
  /** Milliseconds elapsed when the deadline was observed. */
  readonly elapsedMs: number

  constructor(details: WorkflowRunDeadlineDetails) {
    super(
      `The run passed its deadline: ${details.elapsedMs} ms elapsed of the ${details.deadlineMs} ms allowed. ` +
        'Raise the run deadline in the run options, or split the workflow into shorter runs.',
      { code: WORKFLOW_RUN_DEADLINE, cause: details.cause },
    )
    this.name = 'WorkflowRunDeadlineError'
    this.deadlineMs = details.deadlineMs
    this.elapsedMs = details.elapsedMs
  }

  /** True for this error from any installed copy of the package. */
  static override isInstance(value: unknown): value is WorkflowRunDeadlineError {
    return hasLocusErrorCode(value, WORKFLOW_RUN_DEADLINE)
  }
}
