export { PROVIDER_KEY_VARIABLES, createAiSdkHost } from './create-ai-sdk-host.js'
export type { AiSdkAgentSession, AiSdkHost } from './create-ai-sdk-host.js'
export { AI_SDK_ATTEMPT_LOG_MODES, AI_SDK_HOST_APIS, parseAiSdkHostOptions } from './ai-sdk-host-options.js'
export type { AiSdkAgentOverride, AiSdkAttemptLog, AiSdkHostApi, AiSdkHostOptions, AiSdkLanguageModel } from './ai-sdk-host-options.js'
export { AI_SDK_HOST_OPTIONS_INVALID, AiSdkHostOptionsError, isAiSdkHostOptionsError } from './ai-sdk-host-error.js'
export { classifyLlmError } from './classify-llm-error.js'
export type { LlmFailure } from './classify-llm-error.js'
export { parseRetryAfterMs } from './retry-after.js'
export type { LlmAttempt, LlmProgress } from './llm-attempt.js'
export { LLM_ATTEMPTS_FILE } from './ai-sdk-session.js'
export type { AiSdkPromptOptions, AiSdkTurnResult } from './ai-sdk-session.js'
export { resolveAgentSettings } from './resolve-agent-settings.js'
export type { AgentSettings, AgentSettingSource } from './resolve-agent-settings.js'
export { TURN_BUDGET_DEFAULTS, resolveTurnBudget } from './turn-budget.js'
export type {
  AiSdkCallBudgets,
  AiSdkSessionRequest,
  ResolvedTurnBudget,
  TurnBudget,
  TurnBudgetBound,
  TurnBudgetOverride,
  TurnBudgetSource,
} from './turn-budget.js'
export { aiSdkHostOptionsFromSettings } from './host-settings.js'
export type { AiSdkAgentSettings, AiSdkHostSettings } from './host-settings.js'
