import { RetryPolicySchema, type RetryPolicy } from '@locus/retry'
import { LAUNCH_MODES, type LaunchMode } from '@locus/host-contract'
import { z } from 'zod'
import { AiSdkHostOptionsError } from './ai-sdk-host-error.js'
import { AI_SDK_HOST_APIS, type AiSdkAgentOverride, type AiSdkHostApi, type AiSdkHostOptions } from './ai-sdk-host-options.js'
import type { TurnBudgetOverride } from './turn-budget.js'

/** A role's recorded settings: the JSON-safe part of an {@link AiSdkAgentOverride}. */
export type AiSdkAgentSettings = Pick<AiSdkAgentOverride, 'model' | 'system' | 'retry' | 'turnBudget' | 'maxOutputTokens' | 'tools' | 'streaming'>

/**
 * What a run records of its AI SDK host (in `run_start`), so that `resume`
 * and `replay` can build the same host again: JSON-safe, and never the API
 * key or the extra headers, which may carry credentials. `apiKey: 'given'`
 * says a key was used, so a resume knows to ask for one.
 */
export interface AiSdkHostSettings {
  readonly host: 'ai-sdk'
  readonly name: string
  readonly api: AiSdkHostApi
  readonly baseURL?: string
  readonly modelId?: string
  readonly providerName?: string
  readonly useWorkflowModels: boolean
  readonly retry?: RetryPolicy
  readonly agents?: Readonly<Record<string, AiSdkAgentSettings>>
  readonly turnBudget?: TurnBudgetOverride
  readonly launchMode?: LaunchMode
  readonly streaming: boolean
  readonly maxOutputTokens?: number | null
  readonly tools: boolean
  /** Whether an API key was given; the key itself is never recorded. */
  readonly apiKey: 'given' | 'none'
  /**
   * True when the host was built from a `provider` function or a `model`
   * object, which no record can hold: a resume must hand them in again.
   */
  readonly customModel: boolean
}

type Defined<T> = { [K in keyof T as undefined extends T[K] ? never : K]: T[K] } & { [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined> }

/** The object without its undefined fields, typed so (exact optional properties hold). */
function defined<T extends object>(value: T): Defined<T> {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as Defined<T>
}

/** The recordable settings of validated host options. */
export function describeAiSdkHostSettings(options: AiSdkHostOptions): AiSdkHostSettings {
  const agents =
    options.agents === undefined
      ? undefined
      : Object.fromEntries(
          Object.entries(options.agents).map(([role, agent]) => [
            role,
            defined({
              model: agent.model,
              system: agent.system,
              retry: agent.retry,
              turnBudget: agent.turnBudget,
              maxOutputTokens: agent.maxOutputTokens,
              tools: agent.tools,
              streaming: agent.streaming,
            }),
          ]),
        )
  return defined({
    host: 'ai-sdk' as const,
    name: options.name ?? 'ai-sdk',
    api: options.api ?? 'openai-compatible',
    baseURL: options.baseURL,
    modelId: options.modelId ?? options.model?.modelId,
    providerName: options.providerName,
    useWorkflowModels: options.useWorkflowModels ?? true,
    retry: options.retry,
    agents,
    turnBudget: options.turnBudget,
    launchMode: options.launchMode,
    streaming: options.streaming ?? true,
    maxOutputTokens: options.maxOutputTokens,
    tools: options.tools ?? true,
    apiKey: options.apiKey === undefined || options.apiKey === '' ? ('none' as const) : ('given' as const),
    customModel: options.provider !== undefined || options.model !== undefined,
  })
}

const bound = z.number().positive().nullable().optional()
const turnBudgetSchema = z.object({ totalMs: bound, idleMs: bound }).strict()
const outputCap = z.number().int().positive().nullable().optional()

const settingsSchema = z
  .object({
    host: z.literal('ai-sdk'),
    name: z.string().min(1),
    api: z.enum(AI_SDK_HOST_APIS),
    baseURL: z.string().optional(),
    modelId: z.string().min(1).optional(),
    providerName: z.string().min(1).optional(),
    useWorkflowModels: z.boolean(),
    retry: RetryPolicySchema.optional(),
    agents: z
      .record(
        z.string(),
        z
          .object({
            model: z.string().min(1).optional(),
            system: z.string().optional(),
            retry: RetryPolicySchema.optional(),
            turnBudget: turnBudgetSchema.optional(),
            maxOutputTokens: outputCap,
            tools: z.boolean().optional(),
            streaming: z.boolean().optional(),
          })
          .strict(),
      )
      .optional(),
    turnBudget: turnBudgetSchema.optional(),
    launchMode: z.enum(LAUNCH_MODES).optional(),
    streaming: z.boolean(),
    maxOutputTokens: outputCap,
    tools: z.boolean(),
    apiKey: z.enum(['given', 'none']),
    customModel: z.boolean(),
  })
  // A record written by a later version may carry more; what this version knows is enough to rebuild the host.
  .loose()

/**
 * Host options rebuilt from recorded settings (a `run_start` line read back),
 * for `resume` and `replay`. The API key is not in the record: pass it (from a
 * flag or the environment) as `apiKey`, and lay any flags the user gave over
 * the result; theirs win.
 *
 * @throws {AiSdkHostOptionsError} when the record is not the settings of an AI SDK host.
 * @example
 * ```ts
 * const options = aiSdkHostOptionsFromSettings(runStart.host, { apiKey: process.env.LOCUS_API_KEY })
 * const host = createAiSdkHost({ ...options, ...flagOptions })
 * ```
 */
export function aiSdkHostOptionsFromSettings(recorded: unknown, secrets: { readonly apiKey?: string | undefined } = {}): AiSdkHostOptions {
  const parsed = settingsSchema.safeParse(recorded)
  if (!parsed.success) {
    throw new AiSdkHostOptionsError(
      parsed.error.issues.map((issue) => `recorded host settings ${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`),
      parsed.error,
    )
  }
  const settings = parsed.data
  return defined({
    name: settings.name,
    api: settings.api,
    baseURL: settings.baseURL,
    modelId: settings.modelId,
    providerName: settings.providerName,
    useWorkflowModels: settings.useWorkflowModels,
    retry: settings.retry,
    agents: settings.agents,
    turnBudget: settings.turnBudget,
    launchMode: settings.launchMode,
    streaming: settings.streaming,
    maxOutputTokens: settings.maxOutputTokens,
    tools: settings.tools,
    apiKey: secrets.apiKey === '' ? undefined : secrets.apiKey,
  }) as AiSdkHostOptions
}
