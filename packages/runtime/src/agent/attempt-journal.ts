import { serializeError } from '@locus/journal'
import { AgentCallError, SchemaValidationError } from '../errors.js'
import type { RetryRefusal, RunState } from '../run-state.js'
import { messageOf } from './attempt-end.js'
import { describeCall } from './options.js'
import type { AttemptReport, LiveCall } from './perform-attempt.js'

/** Whether a failed attempt is followed by another, decided before its terminal line is written. */
export interface RetryDecision {
  readonly wantsRetry: boolean
  readonly refusal: RetryRefusal | undefined
}

/**
 * Writes an attempt's terminal line (an `agent_end`, or an `error` when it
 * threw), naming a retry the run refused, then the `retry` line when another
 * attempt follows.
 */
export function journalAttemptEnd(run: RunState, call: LiveCall, report: AttemptReport, decision: RetryDecision): void {
  const { attempt, callId, end } = report
  const { where, attempts, logicalCallId } = call
  const trio = { attempt, attempts, logicalCallId }
  const refusal = decision.refusal
  const retryRefused = refusal === undefined ? {} : { retryRefused: { by: refusal.by, ...(refusal.costBudget === undefined ? {} : { costBudget: refusal.costBudget }) } }
  const cost = report.cost
  if (end.kind === 'threw') {
    run.emit({
      type: 'error',
      message: `${describeCall(where.agent, where.label)} attempt ${attempt}/${attempts} threw: ${messageOf(end.error)}`,
      error: serializeError(end.error),
      failureCause: end.failureCause,
      callId,
      ...trio,
      ...where,
      ...retryRefused,
    })
  } else {
    run.emit({
      type: 'agent_end',
      callId,
      ...trio,
      ...where,
      ordinal: call.ordinal,
      status: end.kind === 'answered' ? 'completed' : 'failed',
      ...(end.kind === 'failed' ? { failureCause: end.failureCause, reason: end.reason } : { answer: end.answer }),
      ...(end.stopReason === undefined ? {} : { stopReason: end.stopReason }),
      ...(end.usage === undefined ? {} : { usage: end.usage }),
      ...(cost === undefined ? {} : { cost }),
      durationMs: report.durationMs,
      ...retryRefused,
      ...(end.kind === 'answered' && end.repaired !== undefined ? { repaired: { ...end.repaired } } : {}),
    })
  }
  if (end.kind === 'answered' || !decision.wantsRetry || decision.refusal !== undefined) return
  run.emit({
    type: 'retry',
    kind: 'agent',
    message: `[workflow:retry] ${describeCall(where.agent, where.label)} attempt ${attempt}/${attempts} ended ${end.failureCause}; re-sending the same prompt in a new child as attempt ${attempt + 1}`,
    logicalCallId,
    callId,
    fromAttempt: attempt,
    toAttempt: attempt + 1,
    attempts,
    cause: end.failureCause,
  })
}

/**
 * The error a call ends with after its last attempt failed. A cancellation,
 * the deadline or the invocation cap that refused a retry ends the run as it
 * always has (thrown from here); the retry budget ends only this call.
 */
export function failedCallError(run: RunState, call: LiveCall, report: AttemptReport, refusal: RetryRefusal | undefined): Error {
  const { attempt, callId, end } = report
  if (end.kind === 'answered') throw new Error('failedCallError: the attempt answered')
  if (refusal?.error !== undefined) run.refuse(refusal)
  const { where, options, attempts, logicalCallId } = call
  if (end.kind === 'failed' && end.choiceAnswers !== undefined && options.choice !== undefined) {
    return new SchemaValidationError({ choices: options.choice, answers: end.choiceAnswers, callId, logicalCallId })
  }
  const reason = end.kind === 'threw' ? messageOf(end.error) : end.reason
  const exhausted = attempt > 1 ? ` after ${attempt} attempts` : ''
  const refused =
    refusal === undefined
      ? ''
      : refusal.by === 'cost-budget'
        ? `; ${refusal.costBudget?.scope === 'call' ? "the call's" : "the run's"} cost budget could not cover attempt ${attempt + 1} of ${attempts}`
        : `; the run's retry budget refused attempt ${attempt + 1} of ${attempts}`
  return new AgentCallError(`${describeCall(where.agent, where.label)} failed${exhausted} with ${end.failureCause}: ${reason}${refused}`, {
    failureCause: end.failureCause,
    callId,
    logicalCallId,
    attempt,
    attempts,
    agent: where.agent,
    label: where.label,
    phase: where.phase,
    cause: end.kind === 'threw' ? end.error : undefined,
  })
}
