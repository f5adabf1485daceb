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
