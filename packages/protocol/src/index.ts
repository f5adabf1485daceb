export {
  ACTION_TYPES,
  ActionSchema,
  CALL_KINDS,
  CALL_STATUSES,
  CallSchema,
  CallStatusSchema,
  DeadlineSchema,
  ErrorCodeSchema,
  LlmCallActionSchema,
  LlmErrorActionSchema,
  LlmExecuteTriggerSchema,
  LlmMessageSchema,
  LlmResultActionSchema,
  LlmUsageSchema,
  RetryPolicySchema,
  SubAgentSpawnActionSchema,
  TRIGGER_TYPES,
  ToolCallActionSchema,
  ToolErrorActionSchema,
  ToolExecuteTriggerSchema,
  ToolResultActionSchema,
  TriggerSchema,
  WireJsonSchema,
  WorkerResponseSchema,
} from './wire-schemas.js'
export type {
  Action,
  ActionType,
  Call,
  CallKind,
  CallStatus,
  ErrorCode,
  LlmCallAction,
  LlmErrorAction,
  LlmExecuteTrigger,
  LlmMessage,
  LlmResultAction,
  SubAgentSpawnAction,
  ToolCallAction,
  ToolErrorAction,
  ToolExecuteTrigger,
  ToolResultAction,
  Trigger,
  TriggerType,
  WireJson,
  WorkerResponse,
} from './wire-schemas.js'
export type { RetryPolicy } from '@locus/retry'
export { PROTOCOL_MESSAGE_INVALID, ProtocolError, parseAction, parseCall, parseTrigger, parseWorkerResponse } from './parse-wire.js'
export type { ProtocolIssue } from './parse-wire.js'
export { protocolJsonSchema } from './json-schema.js'
export { createWorker, serveNdjson } from './worker.js'
export type { Worker, WorkerLlm, WorkerLlmAnswer, WorkerLlmRequest, WorkerOptions, WorkerTool, WorkerToolContext } from './worker.js'
export { createProtocolHost } from './protocol-host.js'
export { PROTOCOL_HOST_OPTIONS_INVALID, ProtocolHostOptionsError } from './protocol-host-options.js'
export type { ProtocolHostOptions } from './protocol-host-options.js'
export { sendLlmTrigger } from './llm-trigger.js'
export { TransportError, createInProcessTransport, createStdioTransport } from './transport.js'
export type { SendOptions, StdioTransportOptions, StdioTransportSettings, TriggerTransport } from './transport.js'
export { callRemoteTool, sendToolTrigger } from './call-remote-tool.js'
export type { RemoteToolCall } from './call-remote-tool.js'
export { LLM_TRIGGER_ROUTE, createTriggerQueue, routeOfTrigger } from './trigger-queue.js'
export type { AnswerReport, TriggerPoll, TriggerQueue, TriggerQueueOptions, TriggerQueueStats } from './trigger-queue.js'
