export { parallel } from './parallel.js'
export type { ParallelResults, ParallelThunk } from './parallel.js'
export { pipeline } from './pipeline.js'
export type { PipelineStage, PipelineStageContext } from './pipeline.js'
export type { GroupOptions } from './group-options.js'
export type { ReturnedFailureShape, SuccessValue } from './success-value.js'
export { GROUP_END_OUTCOMES, GROUP_KINDS } from './group-event.js'
export type { GroupEndEvent, GroupEndOutcome, GroupEvent, GroupKind, GroupStartEvent } from './group-event.js'
export { createRunScope } from './run-scope.js'
export type { RunScope, RunScopeOptions, ScopeStopCause } from './run-scope.js'
export { allocateChildId, currentScope, currentSlot, runInScope, withSlotLabels } from './slot-context.js'
export type { SlotContext, SlotLabels } from './slot-context.js'
export {
  SLOT_FAILURE_KINDS,
  WORKFLOW_GROUP_FAILURE,
  WorkflowGroupFailureError,
  isWorkflowGroupFailureError,
} from './group-failure-error.js'
export type {
  CompletedGroupSlot,
  FailedGroupSlot,
  GroupSlot,
  NotDispatchedGroupSlot,
  SlotFailure,
  SlotFailureKind,
  WorkflowGroupFailureDetails,
} from './group-failure-error.js'
export { notDispatchedReasonOf } from './not-dispatched.js'
export type { NotDispatchedMark } from './not-dispatched.js'
export { toGroupFailureEnvelope } from './group-failure-envelope.js'
export type { GroupFailureEnvelopeFailure, WorkflowGroupFailureEnvelope } from './group-failure-envelope.js'
export type { ErrorSummary } from './error-summary.js'
export { WORKFLOW_INVOCATION_CAP, WorkflowInvocationCapError } from './invocation-cap-error.js'
export type { WorkflowInvocationCapDetails } from './invocation-cap-error.js'
export { WORKFLOW_RUN_DEADLINE, WorkflowRunDeadlineError } from './run-deadline-error.js'
export type { WorkflowRunDeadlineDetails } from './run-deadline-error.js'
export { HARD_STOP_CODES, isHardStopError } from './hard-stop.js'
export type { HardStopCode } from './hard-stop.js'
export { WORKFLOW_CANCELLED, WorkflowCancelledError } from './workflow-cancelled-error.js'
export type { WorkflowCancelledDetails } from './workflow-cancelled-error.js'
export { GROUP_INVALID_INPUT, GroupInputError } from './group-input-error.js'
export { GROUP_OBSERVER_FAILED, GroupObserverError } from './group-observer-error.js'
