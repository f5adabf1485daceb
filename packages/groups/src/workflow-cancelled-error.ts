import { LocusError, hasLocusErrorCode } from '@locus/outcome'
import type { GroupKind } from './group-event.js'

export const WORKFLOW_CANCELLED = 'WORKFLOW_CANCELLED'

/** Where the cancellation was observed and what it prevented. */
export interface WorkflowCancelledDetails {
  /** The group that observed the cancellation, when a group did. */
  readonly groupId?: string
  /** The kind of that group. */
  readonly groupKind?: GroupKind
  /** Input positions whose work was never dispatched because of the cancellation, ascending. */
  readonly notDispatched?: readonly number[]
  /** The abort reason of the host's signal. */
  readonly cause?: unknown
}

/**
 * The host cancelled the run (its run scope's `AbortSignal` fired). Groups stop
 * dispatching new work, let started branches settle, then reject with this
 * error so the runner can record the run as `cancelled` rather than `failed`.
 *
 * @example
 * ```ts
 * if (WorkflowCancelledError.isInstance(error)) return { disposition: 'cancelled' }
 * ```
 */
export class WorkflowCancelledError extends LocusError {
  declare readonly code: typeof WORKFLOW_CANCELLED
  /** The group that observed the cancellation, if any. */
  readonly groupId: string | undefined
  /** The kind of that group, if any. */
  readonly groupKind: GroupKind | undefined
  /** Input positions never dispatched because of the cancellation, ascending. */
  readonly notDispatched: readonly number[]

  constructor(details: WorkflowCancelledDetails = {}) {
    const notDispatched = details.notDispatched ?? []
    const where = details.groupId === undefined ? 'the run' : `${details.groupKind ?? 'group'} group ${details.groupId}`
    const skipped =
      notDispatched.length === 0
        ? 'after all of its work had been dispatched'
        : `before dispatching ${notDispatched.length} position(s) (indexes ${notDispatched.join(', ')})`
    super(
      `The host cancelled the run; ${where} stopped ${skipped}. ` +
        'This is not a workflow failure: start the run again if the cancellation was not intended.',
      { code: WORKFLOW_CANCELLED, cause: details.cause },
    )
    this.name = 'WorkflowCancelledError'
    this.groupId = details.groupId
    this.groupKind = details.groupKind
    this.notDispatched = notDispatched
  }

  /** True for this error from any installed copy of the package. */
  static override isInstance(value: unknown): value is WorkflowCancelledError {
    return hasLocusErrorCode(value, WORKFLOW_CANCELLED)
  }
}
