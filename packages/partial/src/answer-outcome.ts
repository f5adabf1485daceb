import { ANSWER_OUTCOMES, type AnswerOutcome, AnswerOutcomeSchema } from '@locus/outcome'
import type { Answer } from './answer.js'
import type { Assessment } from './assess-partial.js'

// The vocabulary lives in @locus/outcome so the journal can name it too.
export { ANSWER_OUTCOMES, AnswerOutcomeSchema }
export type { AnswerOutcome }

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
