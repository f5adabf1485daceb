import { type UsdAmount, Usd, parseUsd } from '@locus/cost'
import { PartialInputError } from './partial-error.js'
import type { Plan, PlanStep } from './plan.js'
import { type ToolResultInput, parseToolResult } from './tool-result.js'

/**
 * The part of a run budget a retry decision reads. The budget is shared by
 * the whole plan, so a retry spends a step some later step may need.
 */
export interface StepBudget {
  /** Steps the run may still take, retries included. */
  remainingSteps(): number
  /**
   * Dollars the run may still spend, as a decimal string (`"1.25"`), when it
   * has a money budget: a `CostLedger`'s `remaining()`, formatted.
   * @default no money budget
   */
  remainingUsd?(): string
}

/** Why a failed step is not retried. */
export const STEP_RETRY_REFUSALS = ['succeeded', 'not-required', 'unavailable', 'not-correctable', 'budget', 'cost-budget'] as const
export type StepRetryRefusal = (typeof STEP_RETRY_REFUSALS)[number]

/** A retry decision with its reason, for journaling. */
export type StepRetryDecision = { readonly retry: true } | { readonly retry: false; readonly reason: StepRetryRefusal }

/** Whether `remaining` dollars cover the estimates of `steps`, added exactly as decimals. */
function moneyCovers(remaining: unknown, steps: readonly PlanStep[]): boolean {
  let left: UsdAmount
  try {
    left = parseUsd(remaining, 'budget.remainingUsd()')
  } catch (error) {
    throw new PartialInputError('budget.remainingUsd()', `returned ${String(remaining)}; it must return the dollars left as a decimal string, such as "1.25".`, error)
  }
  const needed = steps.reduce((total, step) => (step.estimatedUsd === undefined ? total : total.add(new Usd(step.estimatedUsd))), new Usd(0))
  return needed.lte(left)
}

/**
 * Decides whether to retry a step inside a run, and says why not:
 * - `succeeded`: nothing to retry.
 * - `not-required`: an enriching or confirming gap costs a sentence; the retry
 *   would cost a step the required ones may need.
 * - `unavailable`: a dependency that is down is not retried on the request path.
 * - `not-correctable`: only `correctable` failures can go differently.
 * - `budget`: the remaining budget does not cover the retry plus every step
 *   after this one; a retry that strands the plan is worse than the gap.
 * - `cost-budget`: the money rule, when the budget has `remainingUsd()`: the
 *   dollars left do not cover the retry's `estimatedUsd` plus the estimates of
 *   every step after it (a step without an estimate counts as nothing).
 *
 * A plain `{ ok: false, error }` without `class` is `fatal`
 * (`DEFAULT_FAILURE_CLASS`), so it is refused as `not-correctable`.
 *
 * Throws {@link PartialInputError} when `budget.remainingSteps()` is not a
 * finite number, or when `result` is no tool result.
 */
export function decideStepRetry(step: PlanStep, given: ToolResultInput, budget: StepBudget, plan: Plan): StepRetryDecision {
  const result = parseToolResult(given)
  if (result.ok) return { retry: false, reason: 'succeeded' }
  if (step.criticality !== 'required') return { retry: false, reason: 'not-required' }
  if (result.class === 'unavailable') return { retry: false, reason: 'unavailable' }
  if (result.class !== 'correctable') return { retry: false, reason: 'not-correctable' }
  const remaining = budget.remainingSteps()
  if (typeof remaining !== 'number' || !Number.isFinite(remaining)) {
    throw new PartialInputError('budget.remainingSteps()', `returned ${String(remaining)}; it must return the number of steps left as a finite number.`)
  }
  const stepsAfter = plan.steps.filter((other) => other.n > step.n).length
  if (remaining < stepsAfter + 1) return { retry: false, reason: 'budget' }
  if (budget.remainingUsd !== undefined && !moneyCovers(budget.remainingUsd(), [step, ...plan.steps.filter((other) => other.n > step.n)])) {
    return { retry: false, reason: 'cost-budget' }
  }
  return { retry: true }
}

/**
 * True only for a failed `required` step whose failure is `correctable`, when
 * the remaining budget covers the retry and the rest of the plan. Never for
 * an `unavailable` dependency. {@link decideStepRetry} gives the reason.
 *
 * @example
 * ```ts
 * if (shouldRetryStep(step, result, { remainingSteps: () => run.stepsLeft }, plan)) result = await runStep(step)
 * ```
 */
export function shouldRetryStep(step: PlanStep, result: ToolResultInput, budget: StepBudget, plan: Plan): boolean {
  return decideStepRetry(step, result, budget, plan).retry
}
