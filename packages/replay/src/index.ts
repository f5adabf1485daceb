export { CANONICAL_REQUEST_FIELDS, canonicalRequest } from './canonical-request.js'
export type {
  AgentCallRequest,
  BudgetInput,
  BudgetValue,
  CallBudgetsRecord,
  CanonicalRequest,
  CanonicalRequestField,
} from './canonical-request.js'
export { canonicalJson } from './canonical-json.js'
export { REQUEST_KEY_PREFIX, requestKey } from './request-key.js'
export { diffCanonicalRequests } from './diff-canonical-requests.js'
export { compareOrdinals } from './compare-ordinals.js'
export { createRecording, mergeRecordings } from './recording.js'
export { CHILD_REQUEST_FIELDS, childRequestKey, diffChildRequests } from './child-request.js'
export type { ChildCallRequest, ChildRequestField } from './child-request.js'
export type {
  AgentRecordingEntry,
  ChildCallRecord,
  ChildRecordingEntry,
  RecordedChildCall,
  RecordedAgentCall,
  RecordedCall,
  RecordedKey,
  RecordedToolCall,
  Recording,
  RecordingEntry,
  ToolCallRecord,
  ToolRecordingEntry,
} from './recording.js'
export { TOOL_REQUEST_FIELDS, diffToolRequests, toolRequestKey } from './tool-request.js'
export type { ToolCallRequest, ToolRequestField } from './tool-request.js'
export { SKIPPED_CALL_REASONS, createRecordingBuilder, loadRecording, recordingFromLines } from './load-recording.js'
export type { EnvelopeTextOf, LoadRecordingOptions, LoadedRecording, SkippedCall, SkippedCallReason } from './load-recording.js'
export { REPLAY_CALL_STATUSES, REPLAY_LIVE_REASONS, createReplaySession } from './replay-session.js'
export type {
  ChildReplayCall,
  ChildReplayDecision,
  ChildReplayFromRecording,
  ReplayCall,
  ReplayCallStatus,
  ReplayDecision,
  ReplayDivergence,
  ReplayExtraCall,
  ReplayField,
  ReplayFromRecording,
  ReplayLiveReason,
  ReplayReport,
  ReplayReportCall,
  ReplaySession,
  ReplaySessionOptions,
  RunLive,
  ToolReplayCall,
  ToolReplayDecision,
  ToolReplayFromRecording,
} from './replay-session.js'
export {
  CanonicalRequestError,
  DuplicateOrdinalError,
  OrdinalRepeatedError,
  REPLAY_ERROR_CODES,
  RecordingEntryError,
  RecordingUnreadableError,
  ReplayOptionsError,
  isReplayError,
} from './replay-errors.js'
export type { ReplayErrorCode, ReplayFieldProblem } from './replay-errors.js'
