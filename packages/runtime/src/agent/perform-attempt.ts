import { AGENT_RESULT_SCHEMA, type AgentResultEnvelope } from '@locus/journal'
import type { AttemptContext } from '@locus/retry'
import type { AgentCallOptions } from '../define.js'
import type { AgentSession, CountedBudgets, HostTool, SessionRequest } from '../host.js'
import type { RunState } from '../run-state.js'
import { type ToolCallParent, callTool } from '../tool-call.js'
import { type AttemptEnd, messageOf, throwsWhenUnavailable } from './attempt-end.js'
import { runAttempt } from './attempt.js'
import { turnBudgetOf } from './options.js'
import type { CallPlace } from './replayed-call.js'
import type { AttemptCost } from '@locus/journal'
import { closeAttemptCost } from './attempt-cost.js'
import { type CallMoney, settleAttempt } from './call-money.js'
import { modelOfRole } from '../run-money.js'

/** One live `agent()` call, as every attempt of it sees it. */
export interface LiveCall {
  readonly prompt: string
  readonly options: AgentCallOptions
  readonly attempts: number
  readonly where: CallPlace & { readonly agent: string }
  readonly ordinal: string
  readonly logicalCallId: string
  readonly key: string
  readonly budgets: CountedBudgets
  /** The call's money budget, when the run or the call has one. */
  readonly money: CallMoney | undefined
}

/** One attempt once it has run and its envelope is written. */
export interface AttemptReport {
  readonly attempt: number
  readonly callId: string
  readonly end: AttemptEnd
  readonly durationMs: number
  /** What the attempt cost, as its terminal line records it; undefined when the run is not priced. */
  readonly cost: AttemptCost | undefined
}

/**
 * The workflow's tools as one attempt's child sees them: each call goes
 * through tool(), journaled under this attempt's callId and numbered within
 * it, never taking a position in the script's group tree.
 */
function toolsForAttempt(run: RunState, callId: string): HostTool[] {
  let count = 0
  const parent: ToolCallParent = { callId, next: () => (count += 1) }
  return run.hostTools.map((tool) => ({ ...tool, invoke: (args: unknown) => callTool(run, tool.name, args, {}, parent) }))
}

/**
 * Runs one physical attempt between its `agent_start` line and its envelope:
 * the first attempt is charged against the invocation cap here (a later one
 * was charged when its retry was claimed), the transcript is kept and the
 * session closed whatever happened.
 */
export async function performAttempt(run: RunState, call: LiveCall, context: AttemptContext): Promise<AttemptReport> {
  const { attempt } = context
  const { where, options } = call
  if (attempt === 1) run.chargeInvocation()
  const callId = `${call.logicalCallId}-a${attempt}`
  const outputs = run.medium.prepareCall(callId)
  const trio = { attempt, attempts: call.attempts, logicalCallId: call.logicalCallId }
  run.emit({
    type: 'agent_start',
    callId,
    ...trio,
    ...where,
    ordinal: call.ordinal,
    requestKey: call.key,
    prompt: call.prompt,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  })
  // The agent_start commits (through a lease fence, on a leased store) before the host is asked.
  const committing = run.commitStart()
  if (committing !== undefined) await committing
  // In a resumed execution, text an earlier execution streamed for this call is thrown away before this attempt streams its own.
  const superseding = run.medium.streams?.supersede(call.logicalCallId)
  if (superseding !== undefined) await superseding
  const startedAt = run.clock.now()
  const sessionRef: { session?: AgentSession } = {}
  const request: SessionRequest = {
    runId: run.runId,
    callId,
    logicalCallId: call.logicalCallId,
    attempt,
    agent: where.agent,
    agentConfig: run.workflow.agents?.[where.agent],
    label: where.label,
    phase: where.phase,
    budgets: { ...call.budgets, ...turnBudgetOf(run.perCallOverrides), ...turnBudgetOf(options.budgets) },
    tools: toolsForAttempt(run, callId),
    artifacts: outputs.artifacts,
    launchMode: run.launchMode,
  }
  const plan = { prompt: call.prompt, options, attempts: call.attempts, request, budgets: call.budgets }
  const end = throwsWhenUnavailable(await runAttempt(run, plan, context, sessionRef))
  // The answer that counts is the journal's agent_end: an attempt that did not answer has all its text thrown away.
  run.medium.streams?.closeAttempt(callId, attempt, end.kind === 'answered' ? undefined : end.failureCause)
  const durationMs = run.clock.now() - startedAt
  // Priced and settled as soon as the attempt ends, before a retry reserves its own worst case.
  const cost = closeAttemptCost(run, callId, modelOfRole(run.workflow, run.host, where.agent), end.kind === 'threw' ? undefined : end.usage)
  settleAttempt(call.money, cost?.usd)
  outputs.writeTranscript(JSON.stringify(sessionRef.session?.transcript() ?? [], null, 2) + '\n')
  try {
    await sessionRef.session?.close?.()
  } catch {
    // closing is best effort; the attempt's outcome is already decided
  }
  // Built one property at a time in a fixed order: spreads of optional parts gave V8 a large
  // dictionary-mode object for every attempt of a long run.
  const fields: Record<string, unknown> = {
    schema: AGENT_RESULT_SCHEMA,
    callId,
    attempt: trio.attempt,
    attempts: trio.attempts,
    logicalCallId: trio.logicalCallId,
    agent: where.agent,
    ordinal: call.ordinal,
    requestKey: call.key,
  }
  if (end.kind !== 'threw' && end.stopReason !== undefined) fields.stopReason = end.stopReason
  if (end.kind !== 'threw' && end.usage !== undefined) fields.usage = end.usage
  fields.paths = outputs.envelopePaths
  if (end.kind === 'answered') {
    fields.status = 'completed'
    fields.answer = end.answer
  } else {
    fields.status = 'failed'
    fields.failureCause = end.failureCause
    fields.reason = end.kind === 'failed' ? end.reason : messageOf(end.error)
  }
  const envelope = fields as unknown as AgentResultEnvelope
  // Written once (exclusively); a crash mid-write leaves an envelope that replay reports as invalid and re-runs.
  outputs.writeEnvelope(JSON.stringify(envelope, null, 2) + '\n')
  return { attempt, callId, end, durationMs, cost }
}

