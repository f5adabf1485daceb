export { LocusError, UNKNOWN_ERROR_CODE, hasLocusErrorCode, toLocusError } from './locus-error.js'
export type { LocusErrorOptions } from './locus-error.js'
export {
  ANSWER_OUTCOMES,
  AnswerOutcomeSchema,
  ERROR_CODES,
  ErrorCodeSchema,
  FAILURE_CAUSES,
  FAILURE_STATUSES,
  FailureCauseSchema,
  FailureStatusSchema,
  RUN_DISPOSITIONS,
  RunDispositionSchema,
  STEP_CRITICALITIES,
  StepCriticalitySchema,
  isErrorCode,
  isFailureCause,
  isFailureStatus,
} from './vocabulary.js'
export type { AnswerOutcome, ErrorCode, FailureCause, FailureStatus, RunDisposition, StepCriticality } from './vocabulary.js'
export type { JsonObject, JsonValue } from './json-value.js'
export { formatJsonPath } from './json-path.js'
export { MAX_JSON_DEPTH, jsonDepth, jsonDepthProblem } from './json-depth.js'
export {
  PREPARATION_FAILURE_REASONS,
  WORKFLOW_RESULT_PREPARATION,
  WorkflowResultPreparationError,
  isWorkflowResultPreparationError,
  prepareWorkflowResult,
} from './prepare-workflow-result.js'
export type { PreparationFailureReason } from './prepare-workflow-result.js'
export { OUTCOME_FAILURE_REASONS, classifyOutcome, isSemanticFailure } from './classify-outcome.js'
export type { OutcomeClassification, OutcomeFailure, OutcomeFailureReason, OutcomeSuccess } from './classify-outcome.js'
export {
  ERROR_CODE_REGISTRY,
  ERROR_KINDS,
  EXIT_CODE_OF_KIND,
  HTTP_STATUS_OF_KIND,
  errorKindOf,
  exitCodeOfError,
  httpStatusOfError,
} from './error-registry.js'
export type { ErrorCodeEntry, ErrorKind, LocusErrorCode } from './error-registry.js'
