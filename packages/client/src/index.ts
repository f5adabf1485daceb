export { createLocusClient } from './locus-client.js'
export type {
  JournalOptions,
  ListRunsOptions,
  LocusClient,
  LocusClientOptions,
  RejectOptions,
  ResolveOptions,
  StartRunOptions,
  StartedRun,
  WorkerPollOptions,
} from './locus-client.js'
export { API_ERROR_CODES, LocusApiError } from './api-error.js'
export type { ApiErrorCode, ClientErrorCode } from './api-error.js'
export { sleepFor } from './journal-events.js'
export type { EventsOptions, Sleep } from './journal-events.js'
export type { TokenStreamOptions, TokenStreamRecord, UiStreamChunk } from './token-stream.js'
export { RUN_STATUSES } from './types.js'
export type {
  DeferredAnswerAccepted,
  SignalAccepted,
  UpdateAccepted,
  UpdateResult,
  QueryResult,
  EventsToken,
  JournalLine,
  LaunchMode,
  PendingDeferral,
  Readiness,
  ResultAnswer,
  RunAccepted,
  RunBudgets,
  RunDisposition,
  RunGap,
  QueueInfo,
  ScheduleDetail,
  ScheduleInfo,
  ScheduleListItem,
  SlotOutcome,
  SlotRecord,
  SlotsRequested,
  RunInfo,
  RunWaits,
  RunLinks,
  RunList,
  RunListItem,
  RunResult,
  RunStatus,
  WorkerAction,
  WorkerActionsReport,
  WorkerTrigger,
  WorkerTriggers,
  WorkflowInfo,
} from './types.js'
