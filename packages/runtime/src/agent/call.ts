import { serializeError } from '@locus/journal'
import { allocateChildId, currentSlot } from '@locus/groups'
import { type AgentCallRequest, requestKey } from '@locus/replay'
import { type CallFailure, type RetryPolicy, isTransportRetryable, runWithRetry, transportRetryPolicy } from '@locus/retry'
import { overrideBudgets } from '../budgets.js'
import type { AgentAnswer, AgentCallOptions } from '../define.js'
import { AgentCallError } from '../errors.js'
import { positionToken } from '../ids.js'
import type { RunState } from '../run-state.js'
import { type RetryDecision, failedCallError, journalAttemptEnd } from './attempt-journal.js'
import { parseAgentCall } from './options.js'
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
      last = await performAttempt(run, call, context)
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
        decision = { wantsRetry, refusal: wantsRetry ? run.claimAgentRetry() : undefined }
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
    budgets: options.budgets === undefined ? undefined : { ...options.budgets },
    returnContractVersion: RETURN_CONTRACT_VERSION,
  }
  const key = requestKey(request)
  if (run.replay !== undefined) {
    const decision = run.replay.next({ ordinal, request })
    if (decision.mode === 'replay') return replayRecordedCall(run, decision.envelope, { ordinal, key, prompt, where })
  }

  const { budgets, increases } = overrideBudgets(run.callDefaults, options.budgets)
  for (const increase of increases) {
    run.emit({ type: 'budget_change', budget: increase.budget, scope: 'call', from: increase.from, to: increase.to, callId: logicalCallId, reason: 'per-call override' })
  }
  return runLiveCall(run, { prompt, options, attempts, where, ordinal, logicalCallId, key, budgets })
}
