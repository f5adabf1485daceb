export { EXECUTION_KINDS } from './run-store.js'
export type {
  ArtifactWriter,
  CreateExecutionOptions,
  ExecutionInfo,
  ExecutionKind,
  ExecutionRef,
  ExecutionWriter,
  IdempotencyRecord,
  JournalSink,
  ListRunsFilter,
  Ownership,
  ReadLinesOptions,
  RunInfo,
  RunStore,
  TailOptions,
} from './run-store.js'
export { RUN_ROW_STATUSES, decodeRowCursor, encodeRowCursor, foldRunRow, newRunRow, parseRunRow, checkRowFilter, rowFromLines, wakeAtOf, DEFAULT_ROW_PAGE, MAX_ROW_PAGE } from './run-rows.js'
export type { ListRunRowsFilter, RunRow, RunRowPage, RunRowStatus } from './run-rows.js'
export { LiveRows } from './live-rows.js'
export { DEFERRED_ANSWERS_DIR, RUN_ROW_FILE, createFileRunStore } from './file-run-store.js'
export { IDEMPOTENCY_INDEX } from './file-idempotency.js'
export type { FileRunStoreOptions } from './file-run-store.js'
export { createMemoryRunStore } from './memory-run-store.js'
export type { MemoryRunStoreOptions } from './memory-run-store.js'
export { ARTIFACT_KEYS, artifactLocation } from './artifact-keys.js'
export { writesInIssueOrder } from './key-order.js'
export { EXECUTION_ID_PREFIX, allocatedExecutionId, kindOfExecutionId } from './execution-ids.js'
export {
  ARTIFACT_EXISTS,
  ARTIFACT_KEY_INVALID,
  ArtifactExistsError,
  ArtifactKeyError,
  EXECUTION_EXISTS,
  ExecutionExistsError,
  RUN_EXISTS,
  RUN_NOT_FOUND,
  RunExistsError,
  LeaseLostError,
  RunNotFoundError,
  RUN_OWNED,
  RunOwnedError,
  STORE_ERROR_CODES,
  STORE_OPTIONS_INVALID,
  StoreOptionsError,
  validateArtifactKey,
  validateDeferredId,
} from './store-errors.js'
export { validateIdempotencyKey, validateIdempotencyRecord } from './idempotency-keys.js'
export type { RunOwner, StoreErrorCode } from './store-errors.js'
export {
  SCHEDULES_DIR,
  SCHEDULE_ID_RULE,
  SLOT_OUTCOMES,
  SLOT_SOURCES,
  createFileScheduleStore,
  createMemoryScheduleStore,
  slotKey,
  validateScheduleId,
  validateSlotRecord,
} from './schedule-store.js'
export type { ListSlotsOptions, ScheduleState, ScheduleStore, SlotOutcome, SlotRecord, SlotRequest, SlotSource, StoredSchedule } from './schedule-store.js'
export {
  DEFAULT_STREAM_RETENTION_MS,
  STREAM_RECORD_KINDS,
  StreamWaiters,
  readBounds,
  streamKeyOf,
  streamRetentionOf,
  waitForRecords,
  validateStreamRecordInput,
} from './stream-store.js'
export type {
  RunStreams,
  StreamKey,
  StreamPruneResult,
  StreamRead,
  StreamReadOptions,
  StreamRecord,
  StreamRecordInput,
  StreamRecordKind,
} from './stream-store.js'
export { createStreamWriter } from './stream-writer.js'
export type { StreamWriter, StreamWriterOptions } from './stream-writer.js'
