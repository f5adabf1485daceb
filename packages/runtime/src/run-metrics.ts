import { type Answer, type AnswerOutcome, type GapRecordInput, type OutcomeStore, STEP_CRITICALITIES, deriveAnswerOutcome } from '@locus/partial'
import type { JsonValue, RunDisposition } from '@locus/outcome'

type JsonRecord = Readonly<Record<string, JsonValue>>

function isRecord(value: JsonValue | undefined): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** An `Answer` of @locus/partial, as it looks after crossing the JSON boundary. */
function answerIn(result: JsonValue): JsonRecord | undefined {
  const candidates = isRecord(result) ? [result, result.answer] : []
  return candidates.find(
    (candidate): candidate is JsonRecord =>
      isRecord(candidate) && typeof candidate.found === 'boolean' && typeof candidate.partial === 'boolean' && Array.isArray(candidate.gaps),
  )
}

/**
 * The answer outcome of a finished run, the metrics axis beside its
 * disposition: an `Answer` in the result (at the root or as `answer`) speaks
 * for itself; otherwise a completed run is `complete`, a failed run whose
 * result says `partial: true` is `partial`, one that says `found: false` is
 * `cannot_answer`, and anything else that did not complete is `failed`.
 */
export function answerOutcomeOf(disposition: RunDisposition, result: JsonValue): AnswerOutcome {
  if (disposition === 'cancelled') return 'failed'
  const answer = answerIn(result)
  if (answer !== undefined) {
    // A detached Answer: deriveAnswerOutcome reads only found, partial and degraded.
    return deriveAnswerOutcome(answer as unknown as Answer)
  }
  if (disposition === 'completed') return 'complete'
  if (isRecord(result) && result.partial === true) return 'partial'
  if (isRecord(result) && result.found === false) return 'cannot_answer'
  return 'failed'
}

/** The gaps an `Answer` in the result lists, as the outcome store records them per tool. */
export function gapsOf(result: JsonValue): GapRecordInput[] {
  const gaps = answerIn(result)?.gaps
  if (!Array.isArray(gaps)) return []
  return gaps.flatMap((gap) => {
    if (!isRecord(gap) || typeof gap.tool !== 'string') return []
    const criticality = STEP_CRITICALITIES.find((value) => value === gap.criticality)
    if (criticality === undefined) return []
    return [{ tool: gap.tool, criticality, ...(typeof gap.reason === 'string' ? { reason: gap.reason } : {}) }]
  })
}

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
