import { type CostLedger, type UsdAmount, createCostLedger, displayUsd, parseUsd } from '@locus/cost'
import { WorkflowGroupFailureError, notDispatchedReasonOf } from '@locus/groups'
import type { RunAnswerJudgement } from '@locus/partial'
import { RuntimeInputError } from './errors.js'
import type { WorkflowDefinition } from './define.js'
import type { AgentHost } from './host.js'
import type { RunOptions } from './run-options.js'
import type { MoneyRefusal } from './run-state.js'

/** The model a role's requests are priced under: the workflow's, the host's for that role, the host's own model, else the host's name. */
export function modelOfRole(workflow: Pick<WorkflowDefinition, 'agents'>, host: AgentHost | undefined, agent: string): string {
  const settings = host?.settings as { readonly modelId?: unknown; readonly agents?: Readonly<Record<string, { readonly model?: unknown } | undefined>> } | undefined
  const fromHost = settings?.agents?.[agent]?.model ?? settings?.modelId
  return workflow.agents?.[agent]?.model ?? (typeof fromHost === 'string' ? fromHost : undefined) ?? host?.name ?? 'unknown'
}

/**
 * Checks a run's money budget before anything is written: it needs prices,
 * and every model the run may call (each declared role's, and the default
 * role's) must have one unless `allowUnpriced`. Returns the budget read.
 *
 * @throws {RuntimeInputError} `RUN_OPTIONS_INVALID`, naming the model and `--prices`.
 */
export function checkMoneyBudget(definition: Pick<WorkflowDefinition, 'agents'>, options: RunOptions): UsdAmount | undefined {
  const given = options.budgets?.maxCostUsd
  if (given === undefined) return undefined
  const limit = parseUsd(given, 'budgets.maxCostUsd', { positive: true })
  const prices = options.prices
  if (prices === undefined) {
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `A cost budget (budgets.maxCostUsd ${displayUsd(limit)}) needs prices: give the run a price table (the \`prices\` option, built with loadPriceTable of @locus/cost).`, [
      'budgets.maxCostUsd: the run has no prices',
    ])
  }
  if (options.allowUnpriced === true) return limit
  const roles = ['default', ...Object.keys(definition.agents ?? {})]
  const unpriced = [...new Set(roles.map((role) => modelOfRole(definition, options.host, role)))].filter((model) => prices.priceOf({ model }) === undefined)
  if (unpriced.length > 0) {
    const list = unpriced.map((model) => `"${model}"`).join(', ')
    throw new RuntimeInputError(
      'RUN_OPTIONS_INVALID',
      `A cost budget of ${displayUsd(limit)} cannot be kept: model ${list} has no price. Give its price in a price file (--prices prices.json, or the \`prices\` option), or allow unpriced models (--allow-unpriced, \`allowUnpriced: true\`), whose requests then reserve nothing.`,
      unpriced.map((model) => `budgets.maxCostUsd: model "${model}" has no price`),
    )
  }
  return limit
}

/** True when what the script threw is the money refusal itself: a refused call, or a group whose only failures were refused calls. */
export function endedOnMoneyRefusal(thrown: unknown): boolean {
  if (notDispatchedReasonOf(thrown) !== undefined) return true
  return WorkflowGroupFailureError.isInstance(thrown) && thrown.failed === 0 && thrown.notDispatched > 0
}

/** The run tree's ledger: a fresh one for a root with a budget, counting what earlier executions spent. */
export function openRunLedger(limit: UsdAmount | undefined, spentBefore: UsdAmount | undefined): CostLedger | undefined {
  return limit === undefined ? undefined : createCostLedger({ limit, spent: spentBefore, scope: 'run' })
}

/**
 * The run's answer once calls were refused for money: each refused call is a
 * gap with its criticality, and a caveat names what the run could not afford.
 * A required call refused makes the answer `cannot_answer`; otherwise an
 * answer that would have read `complete`, or a script that ended on the
 * refusal itself (`endedOnRefusal`: a refused call, or a group whose only
 * failures are refused calls, thrown out of the script), reads `partial`. A
 * run that failed for another reason stays `failed`.
 */
export function judgeWithMoneyRefusals(judgement: RunAnswerJudgement, refusals: readonly MoneyRefusal[], endedOnRefusal: boolean): RunAnswerJudgement {
  if (refusals.length === 0) return judgement
  const gaps = [...judgement.gaps, ...refusals.map((refusal) => ({ tool: refusal.step, criticality: refusal.criticality, reason: refusal.reason }))]
  const shown = refusals.slice(0, 20).map((refusal) => refusal.step)
  const more = refusals.length > shown.length ? ` and ${refusals.length - shown.length} more` : ''
  const why = refusals[0]?.reason.replace(/^not run: /, '') ?? ''
  const caveat = `Could not afford ${refusals.length} call${refusals.length === 1 ? '' : 's'} (${why}): ${shown.join(', ')}${more}.`
  const failedOtherwise = judgement.answerOutcome === 'failed' && !endedOnRefusal
  const outcome = failedOtherwise
    ? 'failed'
    : refusals.some((refusal) => refusal.criticality === 'required')
      ? 'cannot_answer'
      : judgement.answerOutcome === 'complete' || judgement.answerOutcome === 'failed'
        ? 'partial'
        : judgement.answerOutcome
  return { answerOutcome: outcome, gaps, caveats: [...judgement.caveats, caveat] }
}
