import { LocusError, hasLocusErrorCode } from '@locus/outcome'

export const WORKFLOW_INVOCATION_CAP = 'WORKFLOW_INVOCATION_CAP'

/** What the run allowed and what was attempted when the cap was hit. */
export interface WorkflowInvocationCapDetails {
  /** The run's `maxTotalAgentInvocations`. */
  readonly limit: number
  /** The physical attempt that would have exceeded it (1-based count). */
  readonly attempted: number
  /** An underlying error, if any. */
  readonly cause?: unknown
}

/**
 * The run reached its cap on agent invocations (every physical attempt counts,
 * retries included). A hard, run-level failure: it is never reported as one
 * branch's evidence. Once a group observes it, queued branches and pipeline
 * stages stop being dispatched across the whole active group tree, and every
 * group rejects with this same object once its started branches settle.
 *
 * @example
 * ```ts
 * throw new WorkflowInvocationCapError({ limit: 20, attempted: 21 })
 * ```
 */
export class WorkflowInvocationCapError extends LocusError {
  declare readonly code: typeof WORKFLOW_INVOCATION_CAP
  /** The run's `maxTotalAgentInvocations`. */
  readonly limit: number
  /** The attempt number that would have exceeded the cap. */
  readonly attempted: number

  constructor(details: WorkflowInvocationCapDetails) {
    super(
      `The run reached its agent invocation cap: attempt ${details.attempted} would exceed maxTotalAgentInvocations = ${details.limit}. ` +
        'Every physical attempt counts, retries included; raise maxTotalAgentInvocations in the run options or make fewer agent() calls.',
      { code: WORKFLOW_INVOCATION_CAP, cause: details.cause },
    )
    this.name = 'WorkflowInvocationCapError'
    this.limit = details.limit
    this.attempted = details.attempted
  }

  /** True for this error from any installed copy of the package. */
  static override isInstance(value: unknown): value is WorkflowInvocationCapError {
    return hasLocusErrorCode(value, WORKFLOW_INVOCATION_CAP)
  }
}
