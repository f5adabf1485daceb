import { type RetryClock, type RetryPolicy, RetryPolicySchema } from '@locus/retry'
import { type HostRateLimit, LAUNCH_MODES, type LaunchMode } from '@locus/host-contract'
import type { LanguageModel } from 'ai'
import { z } from 'zod'
import { AiSdkHostOptionsError } from './ai-sdk-host-error.js'
import type { LlmAttempt, LlmProgress } from './llm-attempt.js'
import type { TurnBudgetOverride } from './turn-budget.js'

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
  /** This role's turn budget, bound by bound over the host's `turnBudget`. */
  readonly turnBudget?: TurnBudgetOverride
  /** The most output tokens this role's model accepts per request; `null` sends no cap. See {@link AiSdkHostOptions.maxOutputTokens}. */
  readonly maxOutputTokens?: number | null
  /** Whether this role's requests offer the workflow's tools. See {@link AiSdkHostOptions.tools}. */
  readonly tools?: boolean
  /** Whether this role's requests are streamed. See {@link AiSdkHostOptions.streaming}. */
  readonly streaming?: boolean
}

/** When the per-call `llm-attempts.jsonl` file is written. */
export const AI_SDK_ATTEMPT_LOG_MODES = ['on-failure', 'always', 'off'] as const
/** One of {@link AI_SDK_ATTEMPT_LOG_MODES}. */
export type AiSdkAttemptLog = (typeof AI_SDK_ATTEMPT_LOG_MODES)[number]

/**
 * Which provider, and so which wire protocol, the host speaks: any
 * OpenAI-compatible server, OpenAI, Anthropic's Messages API or Google's
 * Gemini API, each through the AI SDK's own provider package.
 */
export const AI_SDK_HOST_APIS = ['openai-compatible', 'openai', 'anthropic', 'google'] as const
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
   * The provider: `openai-compatible` (`@ai-sdk/openai-compatible`, needs
   * `baseURL`), `openai` (`@ai-sdk/openai`'s chat model), `anthropic`
   * (`@ai-sdk/anthropic`) or `google` (`@ai-sdk/google`); the last three may
   * omit `baseURL`, and take their key from `apiKey` or their usual variable
   * (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GOOGLE_GENERATIVE_AI_API_KEY`).
   * `provider` with one of these names means the same.
   * @default 'openai-compatible'
   */
  readonly api?: AiSdkHostApi
  /** The provider name the AI SDK reports. @default 'locus' */
  readonly providerName?: string
  /**
   * A provider by name (as `api`), or a function that resolves a model id to
   * a model, instead of `baseURL`: for example `createOpenAI({ apiKey }).chat`.
   */
  readonly provider?: AiSdkHostApi | ((modelId: string) => AiSdkLanguageModel)
  /** The default model as an object, instead of `modelId`. */
  readonly model?: AiSdkLanguageModel
  /** Per-role overrides: `{ analyst: { model: 'qwen2.5:14b', retry: {...} } }`. */
  readonly agents?: Readonly<Record<string, AiSdkAgentOverride>>
  /** The retry policy of roles that set none (seed 001). @default one attempt, no per-attempt timeout (the turn budget still bounds it) */
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
  /**
   * Shared rate limits on this host's requests, kept by the runtime that
   * calls it: `[{ match: { provider?, model? }, requestsPerMinute?, tokensPerMinute? }]`.
   * A request's provider is `providerName`, else `api` (unless
   * `openai-compatible`), else its model id's part before `/`.
   */
  readonly rateLimits?: readonly HostRateLimit[]
  /**
   * The turn budget: how long one turn may run in all (`totalMs`) and how
   * long an LLM request may go without a byte from the server (`idleMs`)
   * before the host aborts the turn as `host-turn-timeout`, which `attempts`
   * retries. Either bound may be given alone; `null` turns it off. A call's
   * explicit `budgets.turnTimeoutMs` / `turnIdleMs` and `agents[role].turnBudget`
   * win over it.
   * @default TURN_BUDGET_DEFAULTS[launchMode]
   */
  readonly turnBudget?: TurnBudgetOverride
  /**
   * The launch mode whose default turn budget applies when the runtime's
   * session request does not name one.
   * @default 'interactive'
   */
  readonly launchMode?: LaunchMode
  /**
   * Whether each LLM request is streamed (`streamText`): progress reaches
   * `onProgress` as tokens arrive, the idle bound watches every chunk, and a
   * generation may run longer than any single read timeout. `false` waits for
   * the whole completion (`generateText`), for servers whose streams are broken.
   * @default true
   */
  readonly streaming?: boolean
  /**
   * The most output tokens the model accepts per request. Each request's
   * `max_tokens` is the call's remaining output budget, capped at this; `null`
   * sends no `max_tokens` at all (the call's budget is then enforced between
   * requests from the reported usage). Leave it unset to send the budget as it is.
   */
  readonly maxOutputTokens?: number | null
  /**
   * Whether requests offer the workflow's tools. Set it to `false` for a
   * server or model without tool support, which otherwise refuses every
   * request that carries `tools`.
   * @default true
   */
  readonly tools?: boolean
  /** Called with the progress of every streamed LLM call: the first token at once, then at most every `progressIntervalMs`. */
  readonly onProgress?: (progress: LlmProgress) => void
  /** The least time between two `tokens` progress events of one attempt. @default 100 */
  readonly progressIntervalMs?: number
}

const isFunction = (value: unknown): boolean => typeof value === 'function'

const boundSchema = (name: string) =>
  z
    .number({ error: `${name} must be a positive number of milliseconds, or null for no bound` })
    .positive(`${name} must be > 0 (or null for no bound)`)
    .nullable()

const turnBudgetSchema = z
  .object({ totalMs: boundSchema('totalMs').optional(), idleMs: boundSchema('idleMs').optional() }, { error: 'turnBudget must be { totalMs?, idleMs? }' })
  .strict()

const outputCapSchema = z
  .number({ error: 'maxOutputTokens must be a positive integer, or null to send no max_tokens' })
  .int('maxOutputTokens must be an integer')
  .positive('maxOutputTokens must be > 0 (or null to send no max_tokens)')
  .nullable()

const optionsSchema = z
  .object({
    baseURL: z.url({ error: (issue) => `baseURL must be an http(s) URL such as http://localhost:11434/v1, got ${JSON.stringify(issue.input)}` }).optional(),
    modelId: z.string().min(1, 'modelId must not be empty').optional(),
    apiKey: z.string().optional(),
    headers: z.record(z.string(), z.string()).optional(),
    api: z.enum(AI_SDK_HOST_APIS, { error: `api must be one of ${AI_SDK_HOST_APIS.join(', ')}` }).optional(),
    providerName: z.string().min(1).optional(),
    provider: z
      .union([
        z.enum(AI_SDK_HOST_APIS),
        z.custom<(modelId: string) => AiSdkLanguageModel>(isFunction),
      ], { error: `provider must be one of ${AI_SDK_HOST_APIS.join(', ')}, or a function from a model id to a model` })
      .optional(),
    model: z
      .custom<AiSdkLanguageModel>((value) => typeof value === 'object' && value !== null && typeof (value as { modelId?: unknown }).modelId === 'string', {
        error: 'model must be an AI SDK language model object (with a modelId); pass a string id as modelId',
      })
      .optional(),
    agents: z
      .record(
        z.string(),
        z
          .object({
            model: z.string().min(1).optional(),
            system: z.string().optional(),
            retry: RetryPolicySchema.optional(),
            turnBudget: turnBudgetSchema.optional(),
            maxOutputTokens: outputCapSchema.optional(),
            tools: z.boolean().optional(),
            streaming: z.boolean().optional(),
          })
          .strict(),
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
    rateLimits: z
      .array(
        z
          .object({
            match: z.object({ provider: z.string().min(1).optional(), model: z.string().min(1).optional() }).strict(),
            requestsPerMinute: z.number().int('requestsPerMinute must be a positive whole number').positive('requestsPerMinute must be a positive whole number').optional(),
            tokensPerMinute: z.number().int('tokensPerMinute must be a positive whole number').positive('tokensPerMinute must be a positive whole number').optional(),
          })
          .strict()
          .refine((limit) => limit.requestsPerMinute !== undefined || limit.tokensPerMinute !== undefined, 'a rate limit needs requestsPerMinute, tokensPerMinute or both'),
      )
      .optional(),
    turnBudget: turnBudgetSchema.optional(),
    launchMode: z.enum(LAUNCH_MODES, { error: `launchMode must be one of ${LAUNCH_MODES.join(', ')}` }).optional(),
    streaming: z.boolean().optional(),
    maxOutputTokens: outputCapSchema.optional(),
    tools: z.boolean().optional(),
    onProgress: z.custom<(progress: LlmProgress) => void>(isFunction, { error: 'onProgress must be a function' }).optional(),
    progressIntervalMs: z.number({ error: 'progressIntervalMs must be a number of milliseconds' }).min(0, 'progressIntervalMs must be >= 0').optional(),
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
  const given = input as AiSdkHostOptions
  const issues: string[] = []
  if (typeof given.provider === 'string' && given.api !== undefined && given.api !== given.provider) {
    issues.push(`provider: "${given.provider}" disagrees with api "${given.api}"; give one of them`)
  }
  // A provider given by name is the same as api: the rest of the host reads api, and provider only as a function.
  const { provider: named, ...rest } = given
  const options: AiSdkHostOptions = typeof named === 'string' ? { ...rest, api: named } : given
  const api = options.api ?? 'openai-compatible'
  if (options.baseURL === undefined && options.provider === undefined && options.model === undefined && api === 'openai-compatible') {
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
