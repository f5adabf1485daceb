import { type FailureStatus, LocusError, type OutcomeFailureReason, hasLocusErrorCode } from '@locus/outcome'
import { summarizeError } from './error-summary.js'
import type { GroupKind } from './group-event.js'

export const WORKFLOW_GROUP_FAILURE = 'WORKFLOW_GROUP_FAILURE'

/**
 * How a slot failed:
 * - `thrown`: the branch or stage threw (or its promise rejected);
 * - `returned`: its detached return value is a semantic failure (`ok:false`, `partial:true`, or a failure status);
 * - `boundary`: its return value could not cross `prepareWorkflowResult` (BigInt, cycle, throwing `toJSON`).
 */
export const SLOT_FAILURE_KINDS = ['thrown', 'returned', 'boundary'] as const
export type SlotFailureKind = (typeof SLOT_FAILURE_KINDS)[number]

/** The evidence of one failed position. */
export interface SlotFailure {
  /** The input position. */
  readonly index: number
  readonly kind: SlotFailureKind
  /** What was thrown (`thrown`), or the preparation error (`boundary`). */
  readonly error?: unknown
  /** The failure status of a `returned` failure, when the status condition held. */
  readonly status?: FailureStatus
  /** Every condition that held, for a `returned` failure. */
  readonly reasons?: readonly OutcomeFailureReason[]
  /** For a pipeline: the stage at which this item failed. */
  readonly stageIndex?: number
  /** The branch's own label when it failed. */
  readonly label?: string
  /** The branch's own phase when it failed. */
  readonly phase?: string
}

/** A position that succeeded; `value` is what the branch returned (also `null`). */
export interface CompletedGroupSlot {
  readonly index: number
  readonly status: 'completed'
  readonly value: unknown
}

/**
 * A position that failed. `value` is present only when the branch returned
 * something (a `returned` or `boundary` failure): the raw value, as evidence.
 * A thrown position has no `value` key at all.
 */
export interface FailedGroupSlot {
  readonly index: number
  readonly status: 'failed'
  readonly failure: SlotFailure
  readonly value?: unknown
}

/**
 * A position whose branch never dispatched its work: it ended on a call its
 * budget could not afford (see `NotDispatchedMark`). `reason` says why;
 * `failure` keeps what was thrown, as evidence.
 */
export interface NotDispatchedGroupSlot {
  readonly index: number
  readonly status: 'not-dispatched'
  readonly reason: string
  readonly failure: SlotFailure
}

/** One position of a failed group, in input order. */
export type GroupSlot = CompletedGroupSlot | FailedGroupSlot | NotDispatchedGroupSlot

/** Everything a {@link WorkflowGroupFailureError} carries. */
export interface WorkflowGroupFailureDetails {
  readonly groupKind: GroupKind
  readonly groupId: string
  readonly slots: readonly GroupSlot[]
  /** For a pipeline: the stage at which the first failed item (in input order) failed. */
  readonly stageIndex?: number
}

function describeFailure(failure: SlotFailure): string {
  const at = failure.stageIndex === undefined ? `#${failure.index}` : `#${failure.index} at stage ${failure.stageIndex}`
  switch (failure.kind) {
    case 'thrown': {
      const summary = summarizeError(failure.error)
      return `${at} threw ${summary.name}: ${summary.message}`
    }
    case 'returned':
      return `${at} returned a failure (${(failure.reasons ?? []).join(', ')}${failure.status === undefined ? '' : `: status "${failure.status}"`})`
    case 'boundary':
      return `${at} returned a value that cannot cross the JSON boundary`
  }
}

/**
 * A `parallel()` or `pipeline()` group in which at least one position failed,
 * raised once every started branch has settled (the full barrier). Catch it by
 * its stable code to continue with partial results; rethrow anything else.
 *
 * - `slots`: every position in input order; the unambiguous view.
 * - `partialResults`: a convenience view in input order: completed values,
 *   `null` for thrown (and boundary) positions, the raw value of a returned
 *   failure. It always crosses `prepareWorkflowResult`.
 * - `failures`: the failed positions' evidence, each with its `index`.
 *
 * @example
 * ```ts
 * try {
 *   return { ok: true, results: await parallel(thunks) }
 * } catch (error) {
 *   if (!WorkflowGroupFailureError.isInstance(error)) throw error
 *   return { ok: false, partial: true, completed: error.completed, failed: error.failed, failures: error.failures }
 * }
 * ```
 */
export class WorkflowGroupFailureError extends LocusError {
  declare readonly code: typeof WORKFLOW_GROUP_FAILURE
  readonly groupKind: GroupKind
  /** The deterministic id of the group, as `2[3].1`. */
  readonly groupId: string
  readonly total: number
  readonly completed: number
  readonly failed: number
  /** Positions whose branch never dispatched its work (`not-dispatched` slots), not counted in `failed`. */
  readonly notDispatched: number
  readonly slots: readonly GroupSlot[]
  readonly partialResults: readonly unknown[]
  readonly failures: readonly SlotFailure[]
  /** Pipelines only: the stage at which the first failed item failed. */
  readonly stageIndex: number | undefined

  constructor(details: WorkflowGroupFailureDetails) {
    const failures: SlotFailure[] = []
    const partialResults: unknown[] = []
    const reasons: string[] = []
    let completed = 0
    for (const slot of details.slots) {
      if (slot.status === 'completed') {
        completed += 1
        partialResults.push(slot.value)
      } else if (slot.status === 'not-dispatched') {
        reasons.push(`#${slot.index}`)
        partialResults.push(null)
      } else {
        failures.push(slot.failure)
        partialResults.push(slot.failure.kind === 'returned' ? slot.value : null)
      }
    }
    const notDispatched = reasons.length
    const firstReason = details.slots.find((slot): slot is NotDispatchedGroupSlot => slot.status === 'not-dispatched')?.reason
    const total = details.slots.length
    // The cause is the first thing thrown (or the first boundary error), for diagnosis.
    const firstError = failures.find((failure) => failure.kind !== 'returned') ?? details.slots.find((slot): slot is NotDispatchedGroupSlot => slot.status === 'not-dispatched')?.failure
    const shown = failures.slice(0, 3).map(describeFailure).join('; ')
    const more = failures.length > 3 ? `; and ${failures.length - 3} more` : ''
    const failedPart = failures.length === 0 ? '' : `${failures.length} of ${total} position(s) failed (${shown}${more})`
    const refusedPart =
      notDispatched === 0 ? '' : `${notDispatched} of ${total} position(s) not dispatched (${reasons.slice(0, 5).join(', ')}${notDispatched > 5 ? ', ...' : ''}: ${firstReason ?? ''})`
    super(
      `${details.groupKind}() group ${details.groupId} failed: ${[failedPart, refusedPart].filter((part) => part !== '').join('; ')}. ` +
        'Inspect error.slots or error.failures; to continue with partial results, catch code WORKFLOW_GROUP_FAILURE and return partial: true.',
      { code: WORKFLOW_GROUP_FAILURE, cause: firstError?.error },
    )
    this.name = 'WorkflowGroupFailureError'
    this.groupKind = details.groupKind
    this.groupId = details.groupId
    this.total = total
    this.failed = failures.length
    this.notDispatched = notDispatched
    this.completed = completed
    this.slots = details.slots
    this.partialResults = partialResults
    this.failures = failures
    this.stageIndex = details.stageIndex
  }

  /** True for this error from any installed copy of the package. */
  static override isInstance(value: unknown): value is WorkflowGroupFailureError {
    return isWorkflowGroupFailureError(value)
  }
}

/**
 * True when `value` is a group failure, from any installed copy of this package.
 *
 * @example
 * ```ts
 * if (!isWorkflowGroupFailureError(error)) throw error
 * ```
 */
export function isWorkflowGroupFailureError(value: unknown): value is WorkflowGroupFailureError {
  return hasLocusErrorCode(value, WORKFLOW_GROUP_FAILURE)
}
