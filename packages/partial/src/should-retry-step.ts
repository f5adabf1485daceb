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
}

/** Why a failed step is not retried. */
export const STEP_RETRY_REFUSALS = ['succeeded', 'not-required', 'unavailable', 'not-correctable', 'budget'] as const
export type StepRetryRefusal = (typeof STEP_RETRY_REFUSALS)[number]

/** A retry decision with its reason, for journaling. */
export type StepRetryDecision = { readonly retry: true } | { readonly retry: false; readonly reason: StepRetryRefusal }

/**
 * Decides whether to retry a step inside a run, and says why not:
 * - `succeeded`: nothing to retry.
 * - `not-required`: an enriching or confirming gap costs a sentence; the retry
 *   would cost a step the required ones may need.
 * - `unavailable`: a dependency that is down is not retried on the request path.
 * - `not-correctable`: only `correctable` failures can go differently.
 * - `budget`: the remaining budget does not cover the retry plus every step
 *   after this one; a retry that strands the plan is worse than the gap.
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
