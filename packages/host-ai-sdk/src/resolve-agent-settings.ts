import { DEFAULT_RETRY_POLICY, type RetryPolicy, parseRetryPolicy } from '@locus/retry'
import type { SessionRequest } from '@locus/host-contract'
import type { AiSdkHostOptions } from './ai-sdk-host-options.js'
import { type AiSdkSessionRequest, type ResolvedTurnBudget, resolveTurnBudget } from './turn-budget.js'

/** Where a resolved setting came from, most specific first. */
export type AgentSettingSource = 'host-agent' | 'workflow' | 'host-default'

/** What one child session runs with, after precedence. */
export interface AgentSettings {
  readonly modelId: string
  readonly system: string | undefined
  readonly retry: RetryPolicy
  /** The turn budget of this session's turns, with where each bound came from. */
  readonly turnBudget: ResolvedTurnBudget
  /** The most output tokens a request may ask for; `null` sends none; `undefined` sends the call's budget as it is. */
  readonly maxOutputTokens: number | null | undefined
  /** Whether requests offer the workflow's tools. */
  readonly tools: boolean
  /** Whether requests are streamed. */
  readonly streaming: boolean
  readonly sources: { readonly model: AgentSettingSource; readonly retry: AgentSettingSource | 'none' }
}

/**
 * Lays the three layers over each other, field by field: the host's
 * `agents[role]` override wins, then the workflow's agent config (the
 * session request's `agentConfig`), then the host's defaults (`modelId` or
 * `model`, `retry`, else no retry and no per-attempt timeout, the turn
 * budget still bounding each turn). The turn budget adds a
 * fourth layer on top, the call's explicit `budgets.turnTimeoutMs` /
 * `turnIdleMs`, and the launch mode's default below. A workflow's `model` is
 * skipped when `useWorkflowModels` is `false`. The workflow's `retry` is
 * validated here and throws `RetryPolicyError` naming the field when it is
 * malformed.
 *
 * The operator who deploys the host decides last because only they know
 * which models the endpoint serves and how much retrying it tolerates; the
 * workflow's choices stand wherever the operator said nothing.
 */
export function resolveAgentSettings(options: AiSdkHostOptions, request: SessionRequest | AiSdkSessionRequest): AgentSettings {
  const override = options.agents === undefined || !Object.hasOwn(options.agents, request.agent) ? undefined : options.agents[request.agent]
  const workflow = request.agentConfig
  const workflowModel = options.useWorkflowModels === false ? undefined : workflow?.model
  const defaultModelId = options.modelId ?? options.model?.modelId ?? ''

  let model: { id: string; source: AgentSettingSource }
  if (override?.model !== undefined) model = { id: override.model, source: 'host-agent' }
  else if (workflowModel !== undefined) model = { id: workflowModel, source: 'workflow' }
  else model = { id: defaultModelId, source: 'host-default' }

  let retry: { policy: RetryPolicy; source: AgentSettingSource | 'none' }
  if (override?.retry !== undefined) retry = { policy: override.retry, source: 'host-agent' }
  else if (workflow?.retry !== undefined) retry = { policy: parseRetryPolicy(workflow.retry), source: 'workflow' }
  else if (options.retry !== undefined) retry = { policy: options.retry, source: 'host-default' }
  else retry = { policy: DEFAULT_RETRY_POLICY, source: 'none' }

  const readable = request as Partial<Pick<AiSdkSessionRequest, 'budgets' | 'launchMode'>>
  const turnBudget = resolveTurnBudget(
    { host: options.turnBudget, agent: override?.turnBudget, launchMode: options.launchMode },
    { budgets: readable.budgets ?? {}, ...(readable.launchMode === undefined ? {} : { launchMode: readable.launchMode }) },
  )

  return {
    modelId: model.id,
    system: override?.system ?? workflow?.system,
    retry: retry.policy,
    turnBudget,
    maxOutputTokens: override?.maxOutputTokens !== undefined ? override.maxOutputTokens : options.maxOutputTokens,
    tools: override?.tools ?? options.tools ?? true,
    streaming: override?.streaming ?? options.streaming ?? true,
    sources: { model: model.source, retry: retry.source },
  }
}
