import type { FailureStatus, OutcomeFailureReason } from '@locus/outcome'
import type { GroupKind } from './group-event.js'
import {
  type SlotFailure,
  type SlotFailureKind,
  WORKFLOW_GROUP_FAILURE,
  type WorkflowGroupFailureError,
  isWorkflowGroupFailureError,
} from './group-failure-error.js'
import { type ErrorSummary, summarizeError } from './error-summary.js'
import { GroupInputError, describeValue } from './group-input-error.js'

/** A failure's metadata, JSON-safe: no branch values, the error reduced to strings. */
export interface GroupFailureEnvelopeFailure {
  readonly index: number
  readonly kind: SlotFailureKind
  readonly status?: FailureStatus
  readonly reasons?: readonly OutcomeFailureReason[]
  readonly stageIndex?: number
  readonly label?: string
  readonly phase?: string
  readonly error?: ErrorSummary
}

/**
 * The JSON-safe record of a group failure that escaped a workflow script; the
 * runtime persists it as the run's `result`. It keeps counts, slot statuses and
 * failure metadata and omits every branch value, which may not be JSON-safe.
 */
export interface WorkflowGroupFailureEnvelope {
  readonly ok: false
  readonly code: typeof WORKFLOW_GROUP_FAILURE
  readonly groupKind: GroupKind
  readonly groupId: string
  readonly total: number
  readonly completed: number
  readonly failed: number
  /** Positions that were not dispatched (absent when none, as in envelopes written before it existed). */
  readonly notDispatched?: number
  readonly stageIndex?: number
  /** Each position's status; a `not-dispatched` one says why in `reason`. */
  readonly slots: ReadonlyArray<{ readonly index: number; readonly status: 'completed' | 'failed' | 'not-dispatched'; readonly reason?: string }>
  readonly failures: readonly GroupFailureEnvelopeFailure[]
}

function envelopeFailure(failure: SlotFailure): GroupFailureEnvelopeFailure {
  const out: { -readonly [K in keyof GroupFailureEnvelopeFailure]: GroupFailureEnvelopeFailure[K] } = {
    index: failure.index,
    kind: failure.kind,
  }
  if (failure.status !== undefined) out.status = failure.status
  if (failure.reasons !== undefined) out.reasons = [...failure.reasons]
  if (failure.stageIndex !== undefined) out.stageIndex = failure.stageIndex
  if (failure.label !== undefined) out.label = failure.label
  if (failure.phase !== undefined) out.phase = failure.phase
  if (failure.kind !== 'returned') out.error = summarizeError(failure.error)
  return out
}

/**
 * Turns a group failure into its JSON-safe envelope.
 *
 * @throws {GroupInputError} when `error` is not a group failure.
 *
 * @example
 * ```ts
 * catch (error) {
 *   if (isWorkflowGroupFailureError(error)) await writeFile('result.json', JSON.stringify(toGroupFailureEnvelope(error)))
 * }
 * ```
 */
export function toGroupFailureEnvelope(error: WorkflowGroupFailureError): WorkflowGroupFailureEnvelope {
  if (!isWorkflowGroupFailureError(error)) {
    throw new GroupInputError(
      'toGroupFailureEnvelope error',
      `expected a WorkflowGroupFailureError, got ${describeValue(error)}`,
      'Check the code WORKFLOW_GROUP_FAILURE before building an envelope.',
    )
  }
  return {
    ok: false,
    code: WORKFLOW_GROUP_FAILURE,
    groupKind: error.groupKind,
    groupId: error.groupId,
    total: error.total,
    completed: error.completed,
    failed: error.failed,
    ...(error.notDispatched > 0 ? { notDispatched: error.notDispatched } : {}),
    ...(error.stageIndex === undefined ? {} : { stageIndex: error.stageIndex }),
    slots: error.slots.map((slot) => (slot.status === 'not-dispatched' ? { index: slot.index, status: slot.status, reason: slot.reason } : { index: slot.index, status: slot.status })),
    failures: error.failures.map(envelopeFailure),
  }
}
