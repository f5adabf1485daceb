import { z } from 'zod'
import type { Answer } from './answer.js'
import type { Assessment } from './assess-partial.js'

/**
 * The answer outcome of a run, for metrics. This is a second axis, apart from
 * the run's durable disposition (`completed | failed | cancelled`): a root
 * result with `partial: true` is a `failed` disposition, while its answer
 * outcome is `partial`, counted in its own row and not in the error rate.
 */
export const ANSWER_OUTCOMES = ['complete', 'partial', 'cannot_answer', 'failed'] as const
export type AnswerOutcome = (typeof ANSWER_OUTCOMES)[number]
/** zod enum of {@link AnswerOutcome}. */
export const AnswerOutcomeSchema = z.enum(ANSWER_OUTCOMES)

/**
 * Derives the answer outcome from what a run produced:
 * - an assessment: its kind (`complete`, `partial`, `cannot_answer`);
 * - an answer: `cannot_answer` when not found, `partial` when partial or
 *   degraded, else `complete`;
 * - nothing (`undefined` or `null`, the run threw before answering): `failed`.
 *
 * @example
 * ```ts
 * await store.recordRun({ runId, outcome: deriveAnswerOutcome(answer), startedAt })
 * ```
 */
export function deriveAnswerOutcome(produced: Answer | Assessment | null | undefined): AnswerOutcome {
  if (produced === undefined || produced === null) return 'failed'
  if ('kind' in produced) return produced.kind
  if (!produced.found) return 'cannot_answer'
  if (produced.partial || produced.degraded !== undefined) return 'partial'
  return 'complete'
}
