import { systemClock } from '@locus/retry'
import { type AgentHost, type AgentSession, HostError, type SessionRequest } from '@locus/host-contract'
import { type AiSdkHostOptions, type AiSdkLanguageModel, parseAiSdkHostOptions } from './ai-sdk-host-options.js'
import { type AiSdkPromptOptions, AiSdkSession, type AiSdkTurnResult } from './ai-sdk-session.js'
import { type AiSdkHostSettings, describeAiSdkHostSettings } from './host-settings.js'
import { AiSdkHostOptionsError } from './ai-sdk-host-error.js'
import { loadAi, loadAnthropic, loadGoogle, loadOpenAi, loadOpenAiCompatible } from './load-sdk.js'
import { resolveAgentSettings } from './resolve-agent-settings.js'
import type { AiSdkSessionRequest } from './turn-budget.js'

/** A child session of the AI SDK host: its turns carry their LLM attempts and report streamed progress. */
export interface AiSdkAgentSession extends AgentSession {
  prompt(text: string, options: AiSdkPromptOptions): Promise<AiSdkTurnResult>
}

/** The host `createAiSdkHost` returns: an {@link AgentHost} over the Vercel AI SDK. */
export interface AiSdkHost extends AgentHost {
  /** Opens one child session; rejects with `HostError('sdk-unavailable')` when no model can be had. */
  openSession(request: SessionRequest | AiSdkSessionRequest): Promise<AiSdkAgentSession>
  /** The model id a role's sessions would use, after precedence; for diagnostics and dry runs. */
  resolveModelId(request: Pick<SessionRequest, 'agent' | 'agentConfig'>): string
  /**
   * The host's settings as a run should record them in `run_start`: JSON-safe,
   * never the API key; `aiSdkHostOptionsFromSettings` turns them back into options.
   */
  readonly settings: AiSdkHostSettings
}

type ModelFactory = (modelId: string) => AiSdkLanguageModel

/** The variable each named provider reads its key from when `apiKey` is not given. */
export const PROVIDER_KEY_VARIABLES = { openai: 'OPENAI_API_KEY', anthropic: 'ANTHROPIC_API_KEY', google: 'GOOGLE_GENERATIVE_AI_API_KEY' } as const

/**
 * A named hosted provider needs a key: from `apiKey`, or its usual variable.
 * Checked when the host is made, so a run never starts only to fail its first call.
 */
function checkProviderKey(options: AiSdkHostOptions, env: Readonly<Record<string, string | undefined>>): void {
  const api = options.api
  if (api !== 'anthropic' && api !== 'google') return
  if (typeof options.provider === 'function' || options.model !== undefined) return
  const variable = PROVIDER_KEY_VARIABLES[api]
  if (options.apiKey === undefined && (env[variable] ?? '') === '') {
    throw new AiSdkHostOptionsError([`apiKey: the ${api} provider needs an API key; set ${variable} (or pass apiKey)`])
  }
}

async function createFactory(options: AiSdkHostOptions): Promise<ModelFactory | undefined> {
  if (typeof options.provider === 'function') return options.provider
  if (options.baseURL === undefined && (options.api ?? 'openai-compatible') === 'openai-compatible') return undefined
  const headers = options.headers === undefined ? {} : { headers: { ...options.headers } }
  const apiKey = options.apiKey === undefined ? {} : { apiKey: options.apiKey }
  const baseURL = options.baseURL === undefined ? {} : { baseURL: options.baseURL }
  if (options.api === 'anthropic') {
    const { createAnthropic } = await loadAnthropic()
    const provider = createAnthropic({ ...baseURL, ...apiKey, ...headers })
    return (modelId) => provider(modelId)
  }
  if (options.api === 'google') {
    const { createGoogleGenerativeAI } = await loadGoogle()
    const provider = createGoogleGenerativeAI({ ...baseURL, ...apiKey, ...headers })
    return (modelId) => provider(modelId)
  }
  if (options.api === 'openai') {
    const { createOpenAI } = await loadOpenAi()
    const provider = createOpenAI({ ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }), ...apiKey, ...headers })
    return (modelId) => provider.chat(modelId)
  }
  const { createOpenAICompatible } = await loadOpenAiCompatible()
  // includeUsage asks a stream for its token counts (stream_options.include_usage), which the output budget reads.
  const provider = createOpenAICompatible({ name: options.providerName ?? 'locus', baseURL: options.baseURL ?? '', includeUsage: true, ...apiKey, ...headers })
  return (modelId) => provider.chatModel(modelId)
}

/**
 * Creates an agent host that runs each `agent()` call as a child session
 * against a real model through the Vercel AI SDK: any OpenAI-compatible
 * server (Ollama, vLLM, llama.cpp's server, LM Studio) or OpenAI itself.
 *
 * - A session is a message history; a clarification turn continues it.
 * - The workflow's tools are offered to the model with their zod input
 *   schemas; a tool call runs through the runtime (journaled) and counts
 *   against the call's `maxToolCalls` (going over ends as `tool-call-budget`).
 * - Each LLM call runs under the role's seed-001 retry policy (`agents[role].retry`,
 *   else the workflow's agent `retry`, else `options.retry`, else one attempt):
 *   429 is `rate_limited` and waits at least `Retry-After`, 5xx and dropped
 *   connections are `provider_error`, both retried; 401/403 are `refused` and
 *   other 4xx `provider_error`, both terminal; a per-attempt timeout is
 *   `deadline_exceeded` and retried. The AI SDK's own retries are off.
 * - A `length` finish is `stopReason: 'length'` (the runtime fails it as
 *   `provider-error` and keeps the transcript); a content filter or a failed
 *   LLM call is a `provider-error` turn; an abort cancels the request in flight.
 * - Each request is streamed (`streamText`; `streaming: false` waits for the
 *   whole completion instead); progress reaches `onProgress` and the prompt's
 *   own `onProgress`, the first token at once.
 * - Each turn runs under a turn budget (`turnBudget`, by default the launch
 *   mode's `TURN_BUDGET_DEFAULTS`): a turn longer than `totalMs`, or a
 *   request silent for `idleMs`, is aborted and ends as `host-turn-timeout`.
 * - Every LLM attempt of a turn is on its result as `llmAttempts`.
 * - A missing SDK module or a provider that cannot produce the model throws
 *   `HostError('sdk-unavailable')`.
 *
 * @throws {AiSdkHostOptionsError} when the options are unusable.
 * @example
 * ```ts
 * const host = createAiSdkHost({ baseURL: 'http://localhost:11434/v1', modelId: 'llama3.2' })
 * const run = await runWorkflowScript(workflow, { host, input })
 * ```
 */
export function createAiSdkHost(options: AiSdkHostOptions): AiSdkHost {
  const parsed = parseAiSdkHostOptions(options)
  checkProviderKey(parsed, process.env)
  const clock = parsed.clock ?? systemClock
  const models = new Map<string, AiSdkLanguageModel>()
  let factory: Promise<ModelFactory | undefined> | undefined

  async function resolveModel(modelId: string, agent: string): Promise<AiSdkLanguageModel> {
    const cached = models.get(modelId)
    if (cached !== undefined) return cached
    if (parsed.model !== undefined && parsed.model.modelId === modelId) return parsed.model
    factory ??= createFactory(parsed)
    const create = await factory
    if (create === undefined) {
      throw new HostError(
        'sdk-unavailable',
        `Agent "${agent}" asks for model "${modelId}", but the host was given only a model object ("${parsed.model?.modelId ?? ''}") and cannot resolve other ids; ` +
          'pass baseURL or provider to createAiSdkHost, or useWorkflowModels: false to ignore the workflow\'s model.',
      )
    }
    let model: AiSdkLanguageModel
    try {
      model = create(modelId)
    } catch (error) {
      throw new HostError('sdk-unavailable', `The provider could not create model "${modelId}" for agent "${agent}": ${error instanceof Error ? error.message : String(error)}`, error)
    }
    models.set(modelId, model)
    return model
  }

  return {
    name: parsed.name ?? 'ai-sdk',
    specificationVersion: 'v1',
    settings: describeAiSdkHostSettings(parsed),
    ...(parsed.rateLimits === undefined ? {} : { rateLimits: parsed.rateLimits }),
    resolveModelId: (request) => resolveAgentSettings(parsed, request as SessionRequest).modelId,
    async openSession(request: SessionRequest | AiSdkSessionRequest): Promise<AiSdkAgentSession> {
      const settings = resolveAgentSettings(parsed, request)
      const ai = await loadAi()
      const model = await resolveModel(settings.modelId, request.agent)
      return new AiSdkSession({
        ai,
        model,
        settings,
        request,
        clock,
        onLlmAttempt: parsed.onLlmAttempt,
        onProgress: parsed.onProgress,
        progressIntervalMs: parsed.progressIntervalMs ?? 100,
        attemptLog: parsed.attemptLog ?? 'on-failure',
      })
    },
  }
}
