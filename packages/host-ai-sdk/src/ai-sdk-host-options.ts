import { type RetryClock, type RetryPolicy, RetryPolicySchema } from '@locus/retry'
import type { LanguageModel } from 'ai'
import { z } from 'zod'
import { AiSdkHostOptionsError } from './ai-sdk-host-error.js'
import type { LlmAttempt } from './llm-attempt.js'

/** A model object the AI SDK accepts (`LanguageModelV3` or V2), never a bare gateway id string. */
export type AiSdkLanguageModel = Exclude<LanguageModel, string>

/** Per-role overrides of the host. Each field given wins over the workflow's own agent config. */
export interface AiSdkAgentOverride {
  /** A model id resolved through the host's provider (the same endpoint). */
  readonly model?: string
  /** The system prompt of this role's child sessions. */
  readonly system?: string
  /** The seed-001 retry policy of this role's LLM calls. */
  readonly retry?: RetryPolicy
}

/** When the per-call `llm-attempts.jsonl` file is written. */
export const AI_SDK_ATTEMPT_LOG_MODES = ['on-failure', 'always', 'off'] as const
/** One of {@link AI_SDK_ATTEMPT_LOG_MODES}. */
export type AiSdkAttemptLog = (typeof AI_SDK_ATTEMPT_LOG_MODES)[number]

/** Which wire protocol a `baseURL` speaks. */
export const AI_SDK_HOST_APIS = ['openai-compatible', 'openai'] as const
/** One of {@link AI_SDK_HOST_APIS}. */
export type AiSdkHostApi = (typeof AI_SDK_HOST_APIS)[number]

/**
 * Options of {@link createAiSdkHost}. Give the endpoint as `baseURL` (+
 * `apiKey`) with a default `modelId`, or bring your own AI SDK `provider`
 * function, or a ready `model` object.
 */
export interface AiSdkHostOptions {
  /**
   * The server's OpenAI-style base URL, up to and including `/v1`:
   * `http://localhost:11434/v1` (Ollama), `http://localhost:8000/v1` (vLLM),
   * `http://localhost:8080/v1` (llama.cpp), `http://localhost:1234/v1` (LM Studio),
   * `https://api.openai.com/v1`.
   */
  readonly baseURL?: string
  /** The default model id, used by every role that names no model. */
  readonly modelId?: string
  /** Sent as `Authorization: Bearer <apiKey>`. Local servers usually need none. */
  readonly apiKey?: string
  /** Extra headers sent with every request. */
  readonly headers?: Readonly<Record<string, string>>
  /**
   * The wire protocol of `baseURL`: `openai-compatible` (`@ai-sdk/openai-compatible`)
   * or `openai` (`@ai-sdk/openai`'s chat model; `baseURL` may then be omitted).
   * @default 'openai-compatible'
   */
  readonly api?: AiSdkHostApi
  /** The provider name the AI SDK reports. @default 'locus' */
  readonly providerName?: string
  /** Resolves a model id to a model, instead of `baseURL`: for example `createOpenAI({ apiKey }).chat`. */
  readonly provider?: (modelId: string) => AiSdkLanguageModel
  /** The default model as an object, instead of `modelId`. */
  readonly model?: AiSdkLanguageModel
  /** Per-role overrides: `{ analyst: { model: 'qwen2.5:14b', retry: {...} } }`. */
  readonly agents?: Readonly<Record<string, AiSdkAgentOverride>>
  /** The retry policy of roles that set none (seed 001). @default one attempt, no timeout */
  readonly retry?: RetryPolicy
  /**
   * Whether a `model` named by the workflow's own agent config is used. Set it
   * to `false` when the endpoint serves other models than the workflow was
   * written for (a local server): the host's `agents[role].model` or default
   * model then applies.
   * @default true
   */
  readonly useWorkflowModels?: boolean
  /** The clock backoff and per-attempt deadlines wait on; inject a manual one in tests. @default systemClock */
  readonly clock?: RetryClock
  /**
   * When `llm-attempts.jsonl` is written to the call's transcript directory:
   * `on-failure` writes it once any attempt of the session fails or times out
   * (with every attempt before it, then each one after), so a run without
   * trouble pays no extra file; `always` writes every attempt as it ends;
   * `off` writes nothing (use `onLlmAttempt`).
   * @default 'on-failure'
   */
  readonly attemptLog?: AiSdkAttemptLog
  /** Called once for every physical LLM attempt, failed or not. An exception it throws ends the turn. */
  readonly onLlmAttempt?: (attempt: LlmAttempt) => void
  /** The host's name in the run journal. @default 'ai-sdk' */
  readonly name?: string
}

const isFunction = (value: unknown): boolean => typeof value === 'function'

const optionsSchema = z
  .object({
    baseURL: z.url({ error: (issue) => `baseURL must be an http(s) URL such as http://localhost:11434/v1, got ${JSON.stringify(issue.input)}` }).optional(),
    modelId: z.string().min(1, 'modelId must not be empty').optional(),
    apiKey: z.string().optional(),
    headers: z.record(z.string(), z.string()).optional(),
    api: z.enum(AI_SDK_HOST_APIS, { error: `api must be one of ${AI_SDK_HOST_APIS.join(', ')}` }).optional(),
    providerName: z.string().min(1).optional(),
    provider: z.custom<(modelId: string) => AiSdkLanguageModel>(isFunction, { error: 'provider must be a function from a model id to a model' }).optional(),
    model: z
      .custom<AiSdkLanguageModel>((value) => typeof value === 'object' && value !== null && typeof (value as { modelId?: unknown }).modelId === 'string', {
        error: 'model must be an AI SDK language model object (with a modelId); pass a string id as modelId',
      })
      .optional(),
    agents: z
      .record(
        z.string(),
        z.object({ model: z.string().min(1).optional(), system: z.string().optional(), retry: RetryPolicySchema.optional() }).strict(),
      )
      .optional(),
    retry: RetryPolicySchema.optional(),
    useWorkflowModels: z.boolean().optional(),
    clock: z
      .custom<RetryClock>((value) => typeof value === 'object' && value !== null && isFunction((value as Record<string, unknown>).now) && isFunction((value as Record<string, unknown>).sleep), {
        error: 'clock must have now() and sleep(ms, signal)',
      })
      .optional(),
    attemptLog: z.enum(AI_SDK_ATTEMPT_LOG_MODES, { error: `attemptLog must be one of ${AI_SDK_ATTEMPT_LOG_MODES.join(', ')}` }).optional(),
    onLlmAttempt: z.custom<(attempt: LlmAttempt) => void>(isFunction, { error: 'onLlmAttempt must be a function' }).optional(),
    name: z.string().min(1).optional(),
  })
  .strict()

/**
 * Validates host options; every problem is reported with its field, together.
 * @throws {AiSdkHostOptionsError}
 */
export function parseAiSdkHostOptions(input: unknown): AiSdkHostOptions {
  const parsed = optionsSchema.safeParse(input)
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => {
      const path = issue.path.map(String).join('.')
      return issue.code === 'unrecognized_keys' ? `unknown option ${issue.keys.join(', ')}` : `${path === '' ? 'options' : path}: ${issue.message}`
    })
    throw new AiSdkHostOptionsError(issues, parsed.error)
  }
  const options = input as AiSdkHostOptions
  const issues: string[] = []
  const api = options.api ?? 'openai-compatible'
  if (options.baseURL === undefined && options.provider === undefined && options.model === undefined && api !== 'openai') {
    issues.push('baseURL: give the server\'s base URL (or a provider function, or a model object) so the host can reach a model')
  }
  if (options.modelId === undefined && options.model === undefined) {
    issues.push('modelId: give the default model id (for example "llama3.2"), or a model object as model')
  }
  if (options.model !== undefined && options.modelId !== undefined && options.model.modelId !== options.modelId) {
    issues.push(`modelId: "${options.modelId}" disagrees with model.modelId "${options.model.modelId}"; give one of them`)
  }
  if (issues.length > 0) throw new AiSdkHostOptionsError(issues)
  return options
}
