export { HOST_SPECIFICATION_VERSION, LAUNCH_MODES } from './agent-host.js'
export type {
  HostRateLimit,
  AgentConfig,
  ArtifactSink,
  AgentHost,
  AgentSession,
  CallBudgets,
  CountedBudgets,
  HostSpecificationVersion,
  HostTool,
  LaunchMode,
  LlmAttemptRecord,
  LlmUsageRecord,
  SessionRequest,
  StopReason,
  TranscriptEntry,
  TurnProgress,
  TurnTextEvent,
  PromptOptions,
  RateGate,
  TurnResult,
  Usage,
} from './agent-host.js'
export { HOST_CONTRACT_ERROR_CODES, HostError, failureCauseOf } from './host-error.js'
export { hostSpecificationProblem } from './specification.js'
