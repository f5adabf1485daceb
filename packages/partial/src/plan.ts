import { z } from 'zod'
import { PartialInputError, formatIssuePath } from './partial-error.js'
import { type StepCriticality, StepCriticalitySchema } from './step-criticality.js'

/** One step of a plan: which tool it calls and how much the answer needs it. */
export interface PlanStep {
  /** Position of the step in the plan; unique within a plan, and the key of its result. */
  readonly n: number
  /** Name of the tool the step calls; gaps and metrics are counted per tool. */
  readonly tool: string
  /** How much the answer depends on this step. */
  readonly criticality: StepCriticality
  /**
   * What the step checks, in words a reader understands ("the payment
   * history"). Used in "checked ..." and "could not check ..." sentences.
   * @default the tool name
   */
  readonly description?: string
  /**
   * What running the step once may cost at most, as a decimal string of
   * dollars (`"0.012"`): the estimate the money rule of
   * {@link decideStepRetry} adds up for a retry and the steps after it.
   * @default no estimate (counts as nothing)
   */
  readonly estimatedUsd?: string
}

/** The steps of a run, in the order they are meant to run. */
export interface Plan {
  readonly steps: readonly PlanStep[]
}

/** zod schema of a {@link PlanStep}. */
export const PlanStepSchema = z.object({
  n: z.number().int().nonnegative(),
  tool: z.string().min(1, 'a tool name is required'),
  criticality: StepCriticalitySchema,
  description: z.string().min(1).optional(),
  estimatedUsd: z.string().regex(/^\d+(\.\d+)?$/, 'estimatedUsd must be a decimal string of dollars, such as "0.012"').optional(),
})

/** zod schema of a {@link Plan}: step numbers must be unique. */
export const PlanSchema = z
  .object({ steps: z.array(PlanStepSchema) })
  .superRefine((plan, context) => {
    const seen = new Set<number>()
    plan.steps.forEach((step, index) => {
      if (seen.has(step.n)) {
        context.addIssue({
          code: 'custom',
          path: ['steps', index, 'n'],
          message: `step number ${step.n} is used twice; give every step its own n, since results are keyed by it`,
        })
      }
      seen.add(step.n)
    })
  })

/**
 * Checks a plan and returns it typed, or throws {@link PartialInputError}
 * naming the field that is wrong.
 *
 * @example
 * ```ts
 * const plan = parsePlan(JSON.parse(text))
 * ```
 */
export function parsePlan(value: unknown): Plan {
  const parsed = PlanSchema.safeParse(value)
  if (parsed.success) return value as Plan
  const issue = parsed.error.issues[0]
  throw new PartialInputError(
    formatIssuePath('plan', issue?.path ?? []),
    `${issue?.message ?? 'not a plan'}. A plan is { steps: [{ n, tool, criticality, description? }] } with criticality required, enriching or confirming.`,
    parsed.error,
  )
}
