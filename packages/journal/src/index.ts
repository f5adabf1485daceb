export {
  ATTEMPT_TRIO_FIELDS,
  ATTEMPT_TRIO_LINE_TYPES,
  AgentEndLineSchema,
  AgentStartLineSchema,
  BudgetChangeLineSchema,
  ChildEndLineSchema,
  LeaseAcquiredLineSchema,
  LeaseLostLineSchema,
  WorkerTakeoverLineSchema,
  RunCancelRequestedLineSchema,
  TimerStartLineSchema,
  TimerFiredLineSchema,
  SignalReceivedLineSchema,
  SignalWaitStartLineSchema,
  SignalWaitEndLineSchema,
  UpdateReceivedLineSchema,
  UpdateCompletedLineSchema,
  UpdateFailedLineSchema,
  QueuedLineSchema,
  RateWaitLineSchema,
  ChildStartLineSchema,
  ErrorLineSchema,
  GroupEndLineSchema,
  GroupStartLineSchema,
  JOURNAL_LINE_TYPES,
  JOURNAL_SCHEMA_VERSION,
  JournalLineSchema,
  DeferredOpenLineSchema,
  DeferredSettledLineSchema,
  DeferredExpiredLineSchema,
  DECISION_VIAS,
  OnTimeoutPolicySchema,
  LlmAttemptLineSchema,
  LogLineSchema,
  RETRY_MESSAGE_PREFIX,
  RETRY_REFUSERS,
  SIGNAL_VIAS,
  ReplayDivergedLineSchema,
  RetryLineSchema,
  RetryRefusedSchema,
  AttemptCostSchema,
  ChildCostSchema,
  CostSchema,
  ChoiceRepairSchema,
  RunEndLineSchema,
  RunGapSchema,
  RunStartLineSchema,
  ToolEndLineSchema,
  ToolStartLineSchema,
} from './journal-line-schema.js'
export type {
  AgentEndLine,
  AttemptCost,
  ChildCost,
  LineCost,
  AgentStartLine,
  BudgetChangeLine,
  ChildEndLine,
  LeaseAcquiredLine,
  LeaseLostLine,
  WorkerTakeoverLine,
  RunCancelRequestedLine,
  TimerStartLine,
  TimerFiredLine,
  SignalReceivedLine,
  SignalWaitStartLine,
  SignalWaitEndLine,
  UpdateReceivedLine,
  UpdateCompletedLine,
  UpdateFailedLine,
  SignalVia,
  QueuedLine,
  RateWaitLine,
  ChildStartLine,
  ErrorLine,
  GroupEndLine,
  GroupStartLine,
  JournalCommonField,
  JournalLine,
  JournalLineInput,
  JournalLineOf,
  JournalLineType,
  DeferredOpenLine,
  DeferredSettledLine,
  DeferredExpiredLine,
  DecisionVia,
  OnTimeoutPolicyJson,
  LlmAttemptLine,
  LogLine,
  ReplayDivergedLine,
  RetryLine,
  RetryRefused,
  ChoiceRepair,
  RetryRefuser,
  RunEndLine,
  RunGap,
  RunStartLine,
  ToolEndLine,
  ToolStartLine,
} from './journal-line-schema.js'
export { JsonValueSchema } from './json-value-schema.js'
export { agentResultJsonSchema, journalLineJsonSchema } from './journal-line-json-schema.js'
export { JOURNAL_LINE_INVALID, JournalLineError, isJournalLineError } from './journal-line-error.js'
export type { JournalLineErrorDetails } from './journal-line-error.js'
export { parseJournalLine } from './parse-journal-line.js'
export { addUsd } from './usd-sum.js'
export {
  JOURNAL_CLOSED,
  JOURNAL_FILE_ERROR_CODES,
  JOURNAL_READ_FAILED,
  JOURNAL_WRITER_OPTIONS_INVALID,
  JOURNAL_WRITE_FAILED,
  JournalClosedError,
  JournalReadError,
  JournalWriteError,
  JournalWriterOptionsError,
} from './journal-file-errors.js'
export type { JournalFileErrorCode } from './journal-file-errors.js'
export { DEFAULT_BATCH_LINES, DEFAULT_BATCH_MS, JOURNAL_DURABILITIES, createJournalWriter } from './journal-writer.js'
export type { JournalDurability, JournalWriter, JournalWriterOptions } from './journal-writer.js'
export { journalDamage, openJournalLineReader, readJournal, readJournalAsync, readJournalLineAt, readJournalLines, scanJournal } from './read-journal.js'
export type { InvalidJournalLine, JournalDamage, JournalLineReader, JournalLinePlace, JournalReadResult, JournalScanResult, OutOfOrderLine, SeqGap, TornTail } from './read-journal.js'
export {
  AGENT_RESULT_INVALID,
  AGENT_RESULT_SCHEMA,
  AgentResultEnvelopeError,
  AgentResultEnvelopeSchema,
  parseAgentResultEnvelope,
} from './agent-result-envelope.js'
export type {
  AgentResultEnvelope,
  AgentResultEnvelopeBody,
  CompletedAgentResult,
  FailedAgentResult,
} from './agent-result-envelope.js'
export { ERROR_FACTORY_INVALID, SerializedErrorSchema, deserializeError, registerErrorFactory, serializeError } from './serialized-error.js'
export type { ErrorFactory, SerializedError } from './serialized-error.js'
export { RUN_ID_INVALID, RUN_ID_RULE, RunIdError, validateRunId } from './run-ids.js'
export { renderOutputsReadme } from './render-outputs-readme.js'
export type { RenderOutputsReadmeOptions } from './render-outputs-readme.js'
export { callOutcome, createRunView } from './run-view.js'
export type {
  AgentAttemptView,
  AgentCallView,
  AttemptStatus,
  CallOutcome,
  ChildAttemptView,
  ChildCallView,
  ChildCallCost,
  CallView,
  ExecutionFoldView,
  GroupView,
  RefusedRetryLine,
  RepairedChoiceLine,
  RunCost,
  RunCounts,
  RunView,
  DeferralView,
  OpenDeferralView,
  OpenTimerView,
  OpenSignalWaitView,
  QueuedView,
  RateWaitsView,
  RunViewOptions,
  ToolAttemptView,
  ToolCallView,
} from './run-view.js'
export { progressTree } from './progress-tree.js'
export type { ProgressCallNode, ProgressGroupNode, ProgressNode, ProgressStatus, ProgressTree } from './progress-tree.js'
export { createLineStamper } from './line-stamper.js'
export type { LineStamper, LineStamperOptions } from './line-stamper.js'
export { callCosts } from './call-costs.js'
export type { AttemptCostEntry, CallCostEntry } from './call-costs.js'
