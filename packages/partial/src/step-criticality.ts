import { z } from 'zod'

/**
 * How much the answer depends on a step, declared on the plan rather than
 * guessed after the fact.
 *
 * - `required`: without it the answer would be wrong, not merely shorter.
 * - `enriching`: without it the answer is narrower and still right.
 * - `confirming`: it double-checks; without it the answer carries a caveat.
 */
export const STEP_CRITICALITIES = ['required', 'enriching', 'confirming'] as const
export type StepCriticality = (typeof STEP_CRITICALITIES)[number]
/** zod enum of {@link StepCriticality}. */
export const StepCriticalitySchema = z.enum(STEP_CRITICALITIES)
