import type { RecordedAgentCall, RecordedCall } from '../src/recording.js'
import { AGENT_RESULT_SCHEMA, type AgentResultEnvelope } from '@locus/journal'

/** An in-memory result envelope of a call's only attempt. */
export function envelopeFor(ordinal: string, status: 'completed' | 'failed' = 'completed'): AgentResultEnvelope {
  const callId = `call-${ordinal.replace(/\W/g, '_')}-a1`
  const common = {
    schema: AGENT_RESULT_SCHEMA,
    callId,
    logicalCallId: callId.slice(0, -3),
    attempt: 1,
    attempts: 1,
    agent: 'analyst',
    ordinal,
    paths: { transcriptDir: `/runs/r/calls/${callId}/transcript`, resultDir: `/runs/r/calls/${callId}/result` },
  } as const
  return status === 'completed'
    ? { ...common, status: 'completed', answer: `answer ${ordinal}` }
    : { ...common, status: 'failed', failureCause: 'provider-error' }
}

/** Narrows a recorded call to an agent call, so a test can read its envelope; a tool call fails the test. */
export function agentCall(call: RecordedCall | undefined): RecordedAgentCall | undefined {
  if (call === undefined) return undefined
  if (call.kind !== 'agent') throw new Error(`expected an agent call at ${call.ordinal}, found a ${call.kind} call`)
  return call
}
