export { STEP_CRITICALITIES, StepCriticalitySchema } from './step-criticality.js'
export type { StepCriticality } from './step-criticality.js'
export { PlanSchema, PlanStepSchema, parsePlan } from './plan.js'
export type { Plan, PlanStep } from './plan.js'
export {
  DEFAULT_FAILURE_CLASS,
  FAILURE_CLASSES,
  FailureClassSchema,
  ToolResultSchema,
  isEmptyData,
  isEmptyResult,
  parseToolResult,
  toolEmpty,
  toolFailed,
  toolFound,
  toolOk,
} from './tool-result.js'
export type {
  FailureClass,
  PlainToolFailed,
  PlainToolOk,
  ToolEmpty,
  ToolFailed,
  ToolFound,
  ToolResult,
  ToolResultInput,
  ToolSucceeded,
} from './tool-result.js'
export { NOT_REACHED } from './gap.js'
export type { Gap } from './gap.js'
export { describeGap, describeOutcome, describeStep, gapCaveat } from './describe-outcome.js'
export { assessPartial } from './assess-partial.js'
export type { Assessment, CannotAnswerAssessment, CompleteAssessment, PartialAssessment } from './assess-partial.js'
export type { Answer, DegradedRoute, GatheredResult } from './answer.js'
export { renderAnswer } from './render-answer.js'
export type { RenderAnswerOptions } from './render-answer.js'
export { PROMPT_NAMES, fillPromptTemplate, loadPromptTemplate } from './prompt-template.js'
export type { PromptName } from './prompt-template.js'
export { answerPartial } from './answer-partial.js'
export type { GenerateAnswer, GeneratedText, GenerationRequest, RunSnapshot } from './answer-partial.js'
export { STEP_RETRY_REFUSALS, decideStepRetry, shouldRetryStep } from './should-retry-step.js'
export type { StepBudget, StepRetryDecision, StepRetryRefusal } from './should-retry-step.js'
export { withFallback } from './with-fallback.js'
export type { DegradedEvent, FallbackOptions } from './with-fallback.js'
export { ANSWER_OUTCOMES, AnswerOutcomeSchema, deriveAnswerOutcome } from './answer-outcome.js'
export type { AnswerOutcome } from './answer-outcome.js'
export { DEFAULT_REPORT_WINDOW_MS } from './outcome-store.js'
export type {
  CostReport,
  DailyReport,
  DayReport,
  GapRecordInput,
  GapsReport,
  OutcomeCost,
  ToolGapCost,
  MigrationResult,
  OutcomeReport,
  OutcomeStore,
  ReportOptions,
  RunRecordInput,
  ToolGapCount,
} from './outcome-store.js'
// The SQLite and PostgreSQL stores load native drivers: they live at the
// `@locus/partial/sqlite` and `@locus/partial/postgres` subpaths, and
// openOutcomeStore loads the one it needs on demand.
export { OUTCOME_STORE_FILE, openOutcomeStore } from './open-outcome-store.js'
export type { OpenOutcomeStoreOptions } from './open-outcome-store.js'
export { SEED_GAPS_REPORT_SQL, SEED_OUTCOME_REPORT_SQL } from './seed-report-sql.js'
export { formatCostReport, formatGapsReport, formatOutcomeReport } from './format-report.js'
export { readOutcomeReport } from './outcome-report.js'
export type { FullOutcomeReport } from './outcome-report.js'
export { OutcomeStoreError, PARTIAL_ERROR_CODES, PartialInputError } from './partial-error.js'
export type { OutcomeStoreKind, PartialErrorCode } from './partial-error.js'
export { answerOutcomeOf, caveatsOf, findAnswer, gapsOf, judgeRunAnswer } from './run-answer.js'
export type { RunAnswerJudgement } from './run-answer.js'
