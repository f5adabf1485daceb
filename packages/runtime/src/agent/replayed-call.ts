import { type AgentResultEnvelope, serializeError } from '@locus/journal'
import type { AgentAnswer } from '../define.js'
import { AgentCallError } from '../errors.js'
import type { RunState } from '../run-state.js'
import { describeCall } from './options.js'

/** Where a call sits, as its journal lines name it. */
export interface CallPlace {
  readonly agent: string
  readonly label?: string
  readonly phase?: string
  readonly groupId?: string
}

/**
 * Answers a call from its recording: no child, no charge against the cap.
 * The call still leaves an agent_start and a `replayed` agent_end, so the
 * journal shows where each answer came from.
 */
export function replayRecordedCall(
  run: RunState,
  envelope: AgentResultEnvelope,
  call: { ordinal: string; key: string; prompt: string; where: CallPlace },
): AgentAnswer {
  const trio = { attempt: envelope.attempt, attempts: Math.max(envelope.attempts, envelope.attempt), logicalCallId: envelope.logicalCallId }
  run.emit({ type: 'agent_start', callId: envelope.callId, ...trio, ...call.where, ordinal: call.ordinal, requestKey: call.key, prompt: call.prompt })
  const usage = envelope.usage
  if (envelope.status === 'completed') {
    run.emit({
      type: 'agent_end',
      callId: envelope.callId,
      ...trio,
      ...call.where,
      ordinal: call.ordinal,
      status: 'completed',
      durationMs: 0,
      replayed: true,
      ...(usage === undefined ? {} : { usage }),
      ...(envelope.answer === undefined ? {} : { answer: envelope.answer }),
    })
    const answer = typeof envelope.answer === 'string' ? envelope.answer : JSON.stringify(envelope.answer ?? null)
    return { answer, usedFallback: false, callId: envelope.callId, logicalCallId: envelope.logicalCallId, attempt: trio.attempt, attempts: trio.attempts, usage }
  }
  const error = new AgentCallError(`${describeCall(call.where.agent, call.where.label)} failed with ${envelope.failureCause} (replayed from the recording)`, {
    failureCause: envelope.failureCause,
    callId: envelope.callId,
    logicalCallId: envelope.logicalCallId,
    attempt: trio.attempt,
    attempts: trio.attempts,
    agent: call.where.agent,
    label: call.where.label,
    phase: call.where.phase,
  })
  if (envelope.failureCause === 'sdk-unavailable') {
    // Replayed as it ran: a call with no channel throws, so its terminal record is an error line, never an agent_end.
    run.emit({ type: 'error', message: error.message, error: serializeError(error), failureCause: envelope.failureCause, callId: envelope.callId, ...trio, ...call.where, ordinal: call.ordinal })
    throw error
  }
  run.emit({
    type: 'agent_end',
    callId: envelope.callId,
    ...trio,
    ...call.where,
    ordinal: call.ordinal,
    status: 'failed',
    failureCause: envelope.failureCause,
    ...(envelope.reason === undefined ? {} : { reason: envelope.reason }),
    durationMs: 0,
    replayed: true,
  })
  throw error
}
