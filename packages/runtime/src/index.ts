export { checkStartSignal, parseWorkflowInput, resolveRunsDir, toWorkflowDefinition, RUN_RESULT_SCHEMA, RunResultSchema } from './run-workflow-script.js'
export { replayRun, resumeRun, runWorkflowScript, startWorkflowRun } from './launchers.js'
export type { RunResultFile } from './run-result-schema.js'
export { REPLAY_EXECUTION_PREFIX, RESUME_EXECUTION_PREFIX, replayResultOf, resumeResultOf } from './resume-run.js'
export type { ReplayRunResult, ResumeResult } from './resume-run.js'
export { readRunHistory } from './run-history.js'
export type { RunHistory } from './run-history.js'
export type { RunResult, WorkflowFunction } from './run-workflow-script.js'
export { createRuntime } from './create-runtime.js'
export type { PendingDeferral, QueryOutcome, RunHandle, Runtime, RuntimeOptions, RuntimeRunOptions, UpdateWaitOptions } from './create-runtime.js'
/** The name an earlier version gave the handle `startWorkflowRun` returned; it is the one {@link RunHandle} now. */
export type { RunHandle as StartedRun } from './create-runtime.js'
export { SIGNAL_SLOT_PREFIX, checkSignal, keepSignal } from './signals.js'
export type { SignalOutcome } from './signals.js'
export { UPDATE_AUDIT_PREFIX, UPDATE_SLOT_PREFIX, rejectedUpdatesOf } from './updates.js'
export type { RejectedUpdate, UpdateOutcome } from './updates.js'
export { MAX_PRIORITY, MIN_PRIORITY, checkFlowDefinition, checkPriority, createConcurrencyLimiter, resolveFlowKeys } from './flow-control.js'
export { checkRateLimits, createRateLimiter, parseRateLimit, rateLimitDelay, rateLimitName, rateQueues, sleepWakeable } from './rate-limits.js'
export type { RateLimit, RateLimitMatch, RateLimitSnapshot, RateLimiter, RateRequest, RateTicket, RateWait, RateWindow } from './rate-limits.js'
export type { ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyRequest, ConcurrencySlot, DeadlineCounts, FlowKey, QueueSnapshot, QueuedInfo, QueuedReason } from './flow-control.js'
export type { FeedCursor, FeedHooks, LineListener } from './line-feed.js'
export type { RunOptions, StartSignal } from './run-options.js'
export { checkMoneyBudget } from './run-money.js'
export type { RunProgress } from './run-state.js'
export { defineDeferredTool, defineRemoteTool, defineTool, defineWorkflow, isWorkflowDefinition } from './define.js'
export { keepDeferredAnswer } from './deferrals.js'
export type { DeferredAnswer, DeferredAnswerOutcome, DeferredDecider } from './deferrals.js'
export type {
  AgentAnswer,
  AgentCallBudgets,
  AgentCallOptions,
  DeclaredTool,
  DeferredToolDefinition,
  OnTimeout,
  SleepFor,
  SleepFunction,
  SignalHandler,
  SignalSender,
  SignalSet,
  UpdateDeclaration,
  OnUpdateOptions,
  UpdateHandler,
  UpdateSender,
  UpdateSet,
  QuerySet,
  WaitForSignalOptions,
  SpawnFunction,
  SpawnOptions,
  RemoteToolDefinition,
  LogFunction,
  ToolCallContext,
  ToolArgs,
  ToolCallOptions,
  ToolDefinition,
  ToolFunction,
  ToolResult,
  ToolSet,
  WorkflowContext,
  WorkflowDefinition,
} from './define.js'
export { LAUNCH_MODES, LAUNCH_MODE_BUDGETS, overrideBudgets } from './budgets.js'
export type { BudgetIncrease, LaunchMode, RunBudgets } from './budgets.js'
export { HOST_CONTRACT_ERROR_CODES, HOST_SPECIFICATION_VERSION, HostError, failureCauseOf, hostSpecificationProblem } from './host.js'
export type {
  AgentConfig,
  ArtifactSink,
  AgentHost,
  AgentSession,
  CallBudgets,
  CountedBudgets,
  HostSpecificationVersion,
  LlmAttemptRecord,
  TurnProgress,
  TurnTextEvent,
  PromptOptions,
  RateGate,
  HostTool,
  SessionRequest,
  StopReason,
  TranscriptEntry,
  TurnResult,
  Usage,
} from './host.js'
export { createScriptedHost } from './scripted-host.js'
export { parseScriptedFixtures, scriptedFixturesJsonSchema } from './scripted-fixtures.js'
export type { ScriptedFixtures } from './scripted-fixtures.js'
export type { ScriptedHost, ScriptedHostCall, ScriptedHostOptions, ScriptedMatch, ScriptedRule, ScriptedStep } from './scripted-host.js'
export {
  AgentCallError,
  ChildWorkflowError,
  RUNTIME_ERROR_CODES,
  RunCompletedError,
  RuntimeInputError,
  SchemaValidationError,
  ToolCallError,
  TransportRetryRefusedError,
} from './errors.js'
export type { AgentCallErrorDetails, ChildWorkflowErrorDetails, RuntimeErrorCode } from './errors.js'
export { RETURN_CONTRACT_VERSION, matchChoice } from './agent-call.js'
export { createRunId, positionToken } from './ids.js'
export { abortAs } from './cancel-requests.js'
export { CHILD_EXECUTION_PREFIX, childExecutionIdOf } from './child-call.js'
export { answerOutcomeOf, gapsOf, recordRunOutcome } from './run-metrics.js'
export { NOTHING_RECORDED_PROBLEM, heldStoredRun, latestExecution, readStoredExecution, readStoredRun } from './read-run.js'
export type { ReadStoredRunOptions, StoredExecution, StoredRun } from './read-run.js'
export { summarizeRunView } from './run-summary.js'
export { executionStanding, executionStandings } from './execution-standing.js'
export { drainRuns, resumeSuspendedRuns } from './drain-runs.js'
export type { DrainOptions, DrainReport, ResumeSuspendedReport } from './drain-runs.js'
export type { ExecutionFacts, ExecutionStanding } from './execution-standing.js'
export type { RetriedAttempt, RetriedCall, RunStanding, RunSummary, SummaryChild, SummaryExtras, SummaryGap, SummaryRepair } from './run-summary.js'
export { RecordedRunOptionsSchema, recordedRunOptions, recordedStart } from './recorded-options.js'
export type { ExecutionStart, RecordedExecutionOptions, RecordedRunOptions, RecordedStart, RunStarts } from './recorded-options.js'
export { DEPLOY_CHECK_VERDICTS, checkDeploy } from './check-deploy.js'
export { DURATION_FORMS, durationMs } from './duration.js'
export { sleepDueAt } from './sleep-call.js'
export type { DeployCheckDivergence, DeployCheckOptions, DeployCheckReport, DeployCheckRun, DeployCheckVerdict, LiveAgainCounts } from './check-deploy.js'
// What a tool throws to say whether it may be retried, and the policy's shape: lent with the runtime, so a workflow file needs no other package.
export { CALL_FAILED, CallError, isCallError } from '@locus/retry'
export type { CallErrorOptions, RetryPolicy } from '@locus/retry'
export { startTimerParking } from './timer-parking.js'
export type { TimerParking, TimerParkingOptions } from './timer-parking.js'
export { OVERLAP_POLICIES, bindSchedules, defineSchedule, isScheduleDefinition } from './schedule.js'
export type { OverlapPolicy, ScheduleDefinition, ScheduleOptions } from './schedule.js'
export { describeStoredRun, isOkEnding } from './describe-run.js'
export type { RunDescription } from './describe-run.js'
export { MAX_BACKFILL_SLOTS, backfillSlots, scheduleOfStored } from './schedule-operations.js'
export type { BackfillSlots } from './schedule-operations.js'
export { runtimeScheduleTarget, scheduleRunId, slotJitterMs, startScheduler } from './scheduler.js'
export type { ScheduleTarget, Scheduler, StartSchedulerOptions } from './scheduler.js'
