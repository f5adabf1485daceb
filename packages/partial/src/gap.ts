import type { StepCriticality } from './step-criticality.js'

/** The reason recorded for a step that has no result at all. */
export const NOT_REACHED = 'not reached'

/** A step whose result the answer has to do without. */
export interface Gap {
  /** The step's number in the plan. */
  readonly step: number
  /** The tool the step calls; metrics count gaps per tool. */
  readonly tool: string
  /** How much the answer needed the step. */
  readonly criticality: StepCriticality
  /** The step's error, or `not reached` when it never produced a result. */
  readonly reason: string
  /** What the step checks, in words ("the payment history"). */
  readonly description: string
}
