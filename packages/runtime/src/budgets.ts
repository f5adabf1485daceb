import type { LaunchMode } from '@locus/host-contract'
import type { CallBudgets, CountedBudgets } from './host.js'

// How a run was launched selects the per-call budget defaults its calls share; the modes are part of the host contract.
export { LAUNCH_MODES } from '@locus/host-contract'
export type { LaunchMode } from '@locus/host-contract'

/**
 * Per-call defaults of each launch mode. An interactive run answers a person
 * who is waiting, so its children are kept short; a background run may spend more.
 */
export const LAUNCH_MODE_BUDGETS: Readonly<Record<LaunchMode, CountedBudgets>> = {
  interactive: { maxToolCalls: 20, maxOutputTokens: 8_000, maxAnswerChars: 40_000 },
  background: { maxToolCalls: 100, maxOutputTokens: 32_000, maxAnswerChars: 200_000 },
}

/** Run-level budgets and caps. */
export interface RunBudgets {
  /** Physical agent attempts the whole run may start; every retry counts. Exceeding it is a hard stop. */
  readonly maxTotalAgentInvocations?: number
  /** Milliseconds from the run's start after which no new call is dispatched. Exceeding it is a hard stop. */
  readonly deadlineMs?: number
  /** Run-level per-call budgets; each overrides the launch mode's default. */
  readonly perCall?: CallBudgets
  /**
   * The most the whole run tree (children and every retry included) may spend,
   * in dollars, as a positive decimal (`"2.50"`). Before each physical agent
   * attempt the runtime reserves its worst case; an attempt whose reservation
   * does not fit is not dispatched and its call fails as `cost-budget`. Needs
   * `prices`; a model without a price refuses the run unless `allowUnpriced`.
   */
  readonly maxCostUsd?: string | number
}

/** One budget raised above the level it overrides; the runtime journals each as `budget_change`. */
export interface BudgetIncrease {
  readonly budget: keyof CountedBudgets
  readonly from: number
  readonly to: number
}

const BUDGET_KEYS = ['maxToolCalls', 'maxOutputTokens', 'maxAnswerChars'] as const

/**
 * Lays an explicit override over a base: an explicit value wins, and every
 * value raised above its base is reported so it can be journaled.
 */
export function overrideBudgets(
  base: CountedBudgets,
  override: CallBudgets | undefined,
): { budgets: CountedBudgets; increases: BudgetIncrease[] } {
  if (override === undefined) return { budgets: base, increases: [] }
  const budgets = { ...base }
  const increases: BudgetIncrease[] = []
  for (const key of BUDGET_KEYS) {
    const value = override[key]
    if (value === undefined) continue
    if (value > base[key]) increases.push({ budget: key, from: base[key], to: value })
    budgets[key] = value
  }
  return { budgets, increases }
}
