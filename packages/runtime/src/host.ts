// The host contract lives in @locus/host-contract, so a host can implement it without depending on the runtime.
export { HOST_CONTRACT_ERROR_CODES, HOST_SPECIFICATION_VERSION, HostError, failureCauseOf, hostSpecificationProblem } from '@locus/host-contract'
export type {
  AgentConfig,
  ArtifactSink,
  AgentHost,
  AgentSession,
  CallBudgets,
  CountedBudgets,
  HostSpecificationVersion,
  HostTool,
  LlmAttemptRecord,
  SessionRequest,
  StopReason,
  TranscriptEntry,
  TurnProgress,
  TurnTextEvent,
  PromptOptions,
  RateGate,
  TurnResult,
  Usage,
} from '@locus/host-contract'
