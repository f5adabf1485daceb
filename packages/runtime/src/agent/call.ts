import { serializeError } from '@locus/journal'
import { allocateChildId, currentSlot } from '@locus/groups'
import { type AgentCallRequest, requestKey } from '@locus/replay'
import { type CallFailure, type RetryPolicy, isTransportRetryable, runWithRetry, transportRetryPolicy } from '@locus/retry'
import { overrideBudgets } from '../budgets.js'
import type { AgentAnswer, AgentCallOptions } from '../define.js'
import { AgentCallError } from '../errors.js'
import { positionToken } from '../ids.js'
import type { RetryRefusal, RunState } from '../run-state.js'
import { type RetryDecision, failedCallError, journalAttemptEnd } from './attempt-journal.js'
import { describeCall, parseAgentCall } from './options.js'
import { type CallMoney, journalRefusal, openCallMoney, reserveAttempt } from './call-money.js'
import { type CostRefusal, displayUsd } from '@locus/cost'
import type { StepCriticality } from '@locus/outcome'
import { type AttemptReport, type LiveCall, performAttempt } from './perform-attempt.js'
import { type CallPlace, replayRecordedCall } from './replayed-call.js'

/**
 * The version of the returned-outcome contract calls are made under. It is
 * part of every call's identity, so a recording made under another contract
 * diverges instead of replaying answers judged by different rules.
 */
export const RETURN_CONTRACT_VERSION = 2

/** Carries a failed attempt's report through the retry loop, which sees it as the attempt's failure. */
class AttemptFailed extends Error {
  constructor(readonly report: AttemptReport) {
    super(`attempt ${report.attempt} failed`)
  }
}

/** The report of a failed attempt; anything else the loop caught (a hard stop, a journal that cannot write) is rethrown as it was. */
function reportOf(failure: CallFailure): AttemptReport {
  if (failure.cause instanceof AttemptFailed) return failure.cause.report
  throw failure.cause
}

const NO_RETRY: RetryDecision = { wantsRetry: false, refusal: undefined }

/**
 * Asks for a retry the call's own rule allows: first the money (the retry's
 * worst case must fit what is left of the run's and the call's budgets, and
 * is reserved at once so no concurrent call takes it), then the run (the
 * cancellation, the deadline, the invocation cap and the retry budget), which
 * releases the money again when it refuses.
 */
function claimRetry(run: RunState, money: CallMoney | undefined): RetryRefusal | undefined {
  if (money !== undefined) {
    const refusal = reserveAttempt(money)
    if (refusal !== undefined) return { by: 'cost-budget', costBudget: journalRefusal(refusal) }
  }
  const refusal = run.claimAgentRetry()
  if (refusal !== undefined && money?.reservation !== undefined) {
    money.ledger.release(money.reservation)
    money.reservation = undefined
  }
  return refusal
}

/**
 * Ends a call whose first attempt its money budget cannot cover: nothing is
 * dispatched and nothing charged. An `error` line records it (`cost-budget`),
 * the run keeps the gap it leaves for its answer, and the error thrown marks
 * its `parallel()`/`pipeline()` slot `not-dispatched` with the reason.
 */
function refuseForMoney(run: RunState, call: { readonly where: CallPlace & { readonly agent: string }; readonly logicalCallId: string; readonly attempts: number; readonly criticality: StepCriticality }, refusal: CostRefusal): AgentCallError {
  const { where, logicalCallId, attempts } = call
  const reason = `not run: ${refusal.reason}`
  const error = new AgentCallError(
    `${describeCall(where.agent, where.label)} was not dispatched: ${refusal.reason} (${displayUsd(refusal.remaining)} left, its worst case is ${displayUsd(refusal.needed)})`,
    { failureCause: 'cost-budget', callId: `${logicalCallId}-a1`, logicalCallId, attempt: 1, attempts, agent: where.agent, label: where.label, phase: where.phase },
  )
  Object.defineProperty(error, 'notDispatchedReason', { value: reason, enumerable: false })
  // Shaped like the unknown-agent refusal: no attempt trio, since no attempt started.
  run.emit({ type: 'error', message: error.message, error: serializeError(error), failureCause: 'cost-budget', ...where, callId: error.callId })
  run.moneyRefusals.push({ step: where.label ?? where.agent, logicalCallId, criticality: call.criticality, reason })
  return error
}

/**
 * Runs a live call's attempts through the transport retry: up to `attempts`
 * children in a row with no backoff, each bounded by the call's `timeoutMs`
 * (the loop's per-attempt deadline, awaited so the attempt can journal its
 * end), retried only for a cause on the transport allowlist and only when
 * the run grants the retry.
 */
async function runLiveCall(run: RunState, call: LiveCall): Promise<AgentAnswer> {
  let last: AttemptReport | undefined
  let decision = NO_RETRY
  const policy: RetryPolicy = {
    ...transportRetryPolicy(call.attempts),
    timeout_secs: call.options.timeoutMs === undefined ? null : call.options.timeoutMs / 1000,
  }
  const outcome = await runWithRetry(
    async (context) => {
      decision = NO_RETRY
      try {
        last = await performAttempt(run, call, context)
      } catch (error) {
        // A hard stop or a journal that cannot write before the attempt settled: its money is not held any longer.
        if (call.money?.reservation !== undefined) call.money.ledger.release(call.money.reservation)
        throw error
      }
      if (last.end.kind === 'answered') return last
      throw new AttemptFailed(last)
    },
    policy,
    {
      clock: run.clock,
      atDeadline: 'await',
      shouldRetry: (failure) => {
        const report = reportOf(failure)
        // Asked of the run only when the call's own rule allows another attempt: a claim charges it.
        const wantsRetry = report.end.kind !== 'answered' && report.attempt < call.attempts && isTransportRetryable(report.end.failureCause)
        decision = { wantsRetry, refusal: wantsRetry ? claimRetry(run, call.money) : undefined }
        return wantsRetry && decision.refusal === undefined
      },
      onAttempt: () => {
        if (last !== undefined) journalAttemptEnd(run, call, last, decision)
      },
    },
  )
  if (!outcome.ok) throw failedCallError(run, call, reportOf(outcome.failure), decision.refusal)
  const { end, callId, attempt } = outcome.value
  if (end.kind !== 'answered') throw new Error('runLiveCall: an attempt that did not answer was returned as an answer')
  return { answer: end.answer, usedFallback: end.usedFallback, callId, logicalCallId: call.logicalCallId, attempt, attempts: call.attempts, usage: end.usage }
}

/** The budgets that join a call's identity: all but its money budget, which never changes what is asked. */
function keyedBudgets(budgets: AgentCallOptions['budgets']): AgentCallRequest['budgets'] {
  if (budgets === undefined) return undefined
  const { maxCostUsd, ...counted } = budgets
  return maxCostUsd !== undefined && Object.keys(counted).length === 0 ? undefined : counted
}

/** The `agent()` of a workflow context. */
export async function callAgent(run: RunState, prompt: string, rawOptions: AgentCallOptions = {}): Promise<AgentAnswer> {
  const { options, attempts } = parseAgentCall(prompt, rawOptions)
  const slot = currentSlot()
  const agent = options.agent ?? 'default'
  const label = options.label ?? slot?.label
  const phase = options.phase ?? slot?.phase
  const groupId = slot?.groupId
  const ordinal = allocateChildId()
  const logicalCallId = `call-${positionToken(ordinal)}`
  const where: CallPlace & { agent: string } = {
    agent,
    ...(label === undefined ? {} : { label }),
    ...(phase === undefined ? {} : { phase }),
    ...(groupId === undefined ? {} : { groupId }),
  }

  const agents = run.workflow.agents
  if (agents !== undefined && agent !== 'default' && !(agent in agents)) {
    const error = new AgentCallError(
      `Unknown agent role "${agent}"; this workflow declares: ${Object.keys(agents).join(', ') || 'none'}.`,
      { failureCause: 'unknown-agent', callId: `${logicalCallId}-a1`, logicalCallId, attempt: 1, attempts, agent, label, phase },
    )
    run.emit({ type: 'error', message: error.message, error: serializeError(error), failureCause: 'unknown-agent', ...where, callId: error.callId })
    throw error
  }

  // What makes this call the same call on replay; attempts, label and phase never join it.
  const request: AgentCallRequest = {
    agent,
    prompt,
    choice: options.choice,
    choiceFallback: options.choiceFallback,
    timeoutMs: options.timeoutMs,
    budgets: keyedBudgets(options.budgets),
    returnContractVersion: RETURN_CONTRACT_VERSION,
  }
  // A replay session hashes the request once and hands the key back; hashing it again here cost a resume a second SHA-256 per call.
  const decision = run.replay?.next({ ordinal, request })
  if (decision?.mode === 'replay') return replayRecordedCall(run, decision.envelope, { ordinal, key: decision.key, prompt, where })
  const key = decision?.key ?? requestKey(request)

  const { budgets, increases } = overrideBudgets(run.callDefaults, options.budgets)
  for (const increase of increases) {
    run.emit({ type: 'budget_change', budget: increase.budget, scope: 'call', from: increase.from, to: increase.to, callId: logicalCallId, reason: 'per-call override' })
  }
  const money = openCallMoney(run, { prompt, options, agent, budgets })
  if (money !== undefined) {
    const refusal = reserveAttempt(money)
    if (refusal !== undefined) {
      // A cancellation or the passed deadline ends the call as it always has; only a run that could go on is told it cannot afford it.
      run.checkDispatch()
      throw refuseForMoney(run, { where, logicalCallId, attempts, criticality: options.criticality ?? 'required' }, refusal)
    }
  }
  return runLiveCall(run, { prompt, options, attempts, where, ordinal, logicalCallId, key, budgets, money })
}
