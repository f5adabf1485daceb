import { describeStep } from './describe-outcome.js'
import { type Gap, NOT_REACHED } from './gap.js'
import { type Plan, parsePlan } from './plan.js'
import { type ToolResultInput, parseToolResult } from './tool-result.js'

/** Every step answered: nothing is missing. */
export interface CompleteAssessment {
  readonly kind: 'complete'
  readonly answerable: true
  readonly gaps: readonly []
}

/** Only enriching or confirming steps are missing: answer, and say what is missing. */
export interface PartialAssessment {
  readonly kind: 'partial'
  readonly answerable: true
  /** Every failed or unreached step, in plan order; never empty. */
  readonly gaps: readonly Gap[]
}

/** A required step is missing: any answer would read complete and be wrong. */
export interface CannotAnswerAssessment {
  readonly kind: 'cannot_answer'
  readonly answerable: false
  /** Tools of the required steps that failed or were not reached, in plan order, each once. */
  readonly missing: readonly string[]
  /** Every failed or unreached step, required or not, in plan order. */
  readonly gaps: readonly Gap[]
}

/** Whether the run can answer from what survived, and what it lacks. */
export type Assessment = CompleteAssessment | PartialAssessment | CannotAnswerAssessment

/**
 * Decides whether a run can answer from the results it has.
 *
 * A step counts as missing when its result failed or when it has no result
 * (`not reached`). Results may be in any {@link ToolResultInput} shape: a
 * plain `{ ok: true, data: [] }` is an empty answer, not a gap, and a plain
 * `{ ok: false, error }` is a gap whose reason is `error`. If any missing step is `required`, the run cannot answer
 * and `missing` lists those tools; otherwise it answers partially with every
 * missing step as a gap, or completely when nothing is missing. Results for
 * step numbers that are not in the plan are ignored.
 *
 * Throws {@link PartialInputError} for a malformed plan (two steps with one
 * number, an unknown criticality) or a malformed result.
 *
 * @example
 * ```ts
 * const assessment = assessPartial(plan, new Map([[1, toolFound(contract)], [2, toolFailed('unavailable', 'timed out')]]))
 * if (assessment.kind === 'cannot_answer') console.log(assessment.missing)
 * ```
 */
export function assessPartial(plan: Plan, results: ReadonlyMap<number, ToolResultInput>): Assessment {
  parsePlan(plan)
  const gaps: Gap[] = []
  for (const step of plan.steps) {
    const given = results.get(step.n)
    // A JavaScript caller can hand in anything; a malformed result must not be read as a gap or a success.
    const result = given === undefined ? undefined : parseToolResult(given, `results.get(${step.n})`)
    if (result?.ok === true) continue
    gaps.push({
      step: step.n,
      tool: step.tool,
      criticality: step.criticality,
      reason: result === undefined ? NOT_REACHED : result.error,
      description: describeStep(step),
    })
  }
  const missing = [...new Set(gaps.filter((gap) => gap.criticality === 'required').map((gap) => gap.tool))]
  if (missing.length > 0) return { kind: 'cannot_answer', answerable: false, missing, gaps }
  if (gaps.length === 0) return { kind: 'complete', answerable: true, gaps: [] }
  return { kind: 'partial', answerable: true, gaps }
}
