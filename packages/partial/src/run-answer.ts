import type { JsonValue, RunDisposition } from '@locus/outcome'
import type { Answer } from './answer.js'
import { type AnswerOutcome, deriveAnswerOutcome } from './answer-outcome.js'
import type { GapRecordInput } from './outcome-store.js'
import { STEP_CRITICALITIES } from './step-criticality.js'

type JsonRecord = Readonly<Record<string, JsonValue>>

function isRecord(value: JsonValue | undefined): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * The {@link Answer} a workflow returned, as it looks after crossing the JSON
 * boundary: the result itself or its `answer` field, when it has boolean
 * `found` and `partial` and a `gaps` array. This is the one test of "is this
 * JSON an Answer?" that every reader uses.
 *
 * @example
 * ```ts
 * findAnswer({ ok: true, answer: { text: 'x', found: true, partial: false, gaps: [], caveats: [] } })?.text // => 'x'
 * ```
 */
export function findAnswer(result: JsonValue | undefined): JsonRecord | undefined {
  const candidates = isRecord(result) ? [result, result.answer] : []
  return candidates.find(
    (candidate): candidate is JsonRecord =>
      isRecord(candidate) && typeof candidate.found === 'boolean' && typeof candidate.partial === 'boolean' && Array.isArray(candidate.gaps),
  )
}

/**
 * The answer outcome of a finished run, the metrics axis beside its
 * disposition: an Answer in the result speaks for itself; otherwise a
 * completed run is `complete`, a failed run whose result says `partial: true`
 * is `partial`, one that says `found: false` is `cannot_answer`, and anything
 * else that did not complete (a cancelled run included) is `failed`.
 */
export function answerOutcomeOf(disposition: RunDisposition, result: JsonValue): AnswerOutcome {
  if (disposition === 'cancelled') return 'failed'
  const answer = findAnswer(result)
  // deriveAnswerOutcome reads only found, partial and degraded, which a detached Answer keeps.
  if (answer !== undefined) return deriveAnswerOutcome(answer as unknown as Answer)
  if (disposition === 'completed') return 'complete'
  if (isRecord(result) && result.partial === true) return 'partial'
  if (isRecord(result) && result.found === false) return 'cannot_answer'
  return 'failed'
}

/** The gaps the Answer in a result lists, one per tool it could not use, as the outcome store records them. */
export function gapsOf(result: JsonValue): GapRecordInput[] {
  const gaps = findAnswer(result)?.gaps
  if (!Array.isArray(gaps)) return []
  return gaps.flatMap((gap) => {
    if (!isRecord(gap) || typeof gap.tool !== 'string') return []
    const criticality = STEP_CRITICALITIES.find((value) => value === gap.criticality)
    if (criticality === undefined) return []
    return [{ tool: gap.tool, criticality, ...(typeof gap.reason === 'string' ? { reason: gap.reason } : {}) }]
  })
}

/** The caveats of the Answer in a result: the sentences a reader must be shown beside its text. */
export function caveatsOf(result: JsonValue): string[] {
  const caveats = findAnswer(result)?.caveats
  return Array.isArray(caveats) ? caveats.filter((caveat): caveat is string => typeof caveat === 'string') : []
}

/** How a finished run answered: written once, on `run_end` and in `result.json`, and read by every surface. */
export interface RunAnswerJudgement {
  readonly answerOutcome: AnswerOutcome
  readonly gaps: readonly GapRecordInput[]
  readonly caveats: readonly string[]
}

/**
 * Judges a finished run's answer once: its outcome, gaps and caveats.
 *
 * @example
 * ```ts
 * judgeRunAnswer('failed', { ok: false, partial: true }) // => { answerOutcome: 'partial', gaps: [], caveats: [] }
 * ```
 */
export function judgeRunAnswer(disposition: RunDisposition, result: JsonValue): RunAnswerJudgement {
  return { answerOutcome: answerOutcomeOf(disposition, result), gaps: gapsOf(result), caveats: caveatsOf(result) }
}
