import { type AnswerOutcome, type OutcomeStore, answerOutcomeOf, gapsOf } from '@locus/partial'
import type { JsonValue, RunDisposition } from '@locus/outcome'

// The answer judgement lives in @locus/partial, the one place that decides
// whether a result holds an Answer; these names stay exported for callers.
export { answerOutcomeOf, gapsOf }

/** Records a finished run and its gaps in an outcome store. */
export async function recordRunOutcome(
  store: OutcomeStore,
  run: { runId: string; workflow: string; startedAt: Date; disposition: RunDisposition; result: JsonValue },
): Promise<AnswerOutcome> {
  const outcome = answerOutcomeOf(run.disposition, run.result)
  await store.recordRun({ runId: run.runId, outcome, startedAt: run.startedAt, workflow: run.workflow, disposition: run.disposition })
  const gaps = gapsOf(run.result)
  if (gaps.length > 0) await store.recordGaps(run.runId, gaps)
  return outcome
}
