import { type AnswerOutcome, type OutcomeStore, answerOutcomeOf, gapsOf } from '@locus/partial'
import type { RunCost } from '@locus/journal'
import type { JsonValue, RunDisposition } from '@locus/outcome'

// The answer judgement lives in @locus/partial, the one place that decides
// whether a result holds an Answer; these names stay exported for callers.
export { answerOutcomeOf, gapsOf }

/** A run none of whose requests had a price is unpriced (`costUsd: null`), never $0; one partly priced keeps its sum and says how many were not. */
function costColumns(cost: RunCost): { costUsd: string | null; retryOverheadUsd: string | null; unpricedRequests: number } {
  const unpricedOnly = cost.unpricedRequests > 0 && /^0*\.?0*$/.test(cost.usd)
  return unpricedOnly
    ? { costUsd: null, retryOverheadUsd: null, unpricedRequests: cost.unpricedRequests }
    : { costUsd: cost.usd, retryOverheadUsd: cost.retryOverheadUsd, unpricedRequests: cost.unpricedRequests }
}

/**
 * Records a finished run and its gaps in an outcome store, with what the run
 * cost when it was priced (its `RunView.cost`: the total, the retry overhead
 * and the requests that had no price; a run whose every request had no price
 * is recorded without a cost).
 */
export async function recordRunOutcome(
  store: OutcomeStore,
  run: { runId: string; workflow: string; startedAt: Date; disposition: RunDisposition; result: JsonValue; cost?: RunCost | undefined },
): Promise<AnswerOutcome> {
  const outcome = answerOutcomeOf(run.disposition, run.result)
  const cost = run.cost === undefined ? {} : costColumns(run.cost)
  await store.recordRun({ runId: run.runId, outcome, startedAt: run.startedAt, workflow: run.workflow, disposition: run.disposition, ...cost })
  const gaps = gapsOf(run.result)
  if (gaps.length > 0) await store.recordGaps(run.runId, gaps)
  return outcome
}
