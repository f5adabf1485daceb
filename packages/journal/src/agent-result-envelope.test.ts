import { describe, expect, it } from 'vitest'
import { AGENT_RESULT_SCHEMA, AgentResultEnvelopeError, parseAgentResultEnvelope } from './agent-result-envelope.js'

const failed = {
  schema: AGENT_RESULT_SCHEMA,
  callId: 'call-1',
  logicalCallId: 'lc-1',
  attempt: 1,
  attempts: 2,
  agent: 'analyst',
  status: 'failed',
  failureCause: 'call-timeout',
  reason: 'the call timed out after 60 s',
  paths: { transcriptDir: '/runs/run-1/calls/call-1/transcript', resultDir: '/runs/run-1/calls/call-1/result' },
} as const

describe('parseAgentResultEnvelope', () => {
  it('reads a failed envelope with its failureCause', () => {
    expect(parseAgentResultEnvelope(failed)).toStrictEqual(failed)
  })

  it('an old envelope written before failureCause existed reads as unclassified', () => {
    const { failureCause: _dropped, ...old } = failed
    expect(parseAgentResultEnvelope(JSON.parse(JSON.stringify(old)))).toMatchObject({ status: 'failed', failureCause: 'unclassified' })
  })

  it('reads a completed envelope with its answer and usage', () => {
    const completed = {
      ...failed,
      status: 'completed',
      failureCause: undefined,
      reason: undefined,
      answer: 'the summary',
      stopReason: 'stop',
      usage: { inputTokens: 10, outputTokens: 5 },
      ordinal: 'g1[0].1',
      requestKey: 'sha256:abc',
    }
    expect(parseAgentResultEnvelope(JSON.parse(JSON.stringify(completed)))).toMatchObject({ status: 'completed', answer: 'the summary', ordinal: 'g1[0].1' })
  })

  it('refuses a completed envelope that carries a failureCause', () => {
    expect(() => parseAgentResultEnvelope({ ...failed, status: 'completed' })).toThrow(/failureCause/)
  })

  it('refuses an envelope carrying part of the attempt trio, naming what is missing', () => {
    const { attempts: _dropped, ...partial } = failed
    try {
      parseAgentResultEnvelope(partial)
      expect.unreachable()
    } catch (error) {
      expect(AgentResultEnvelopeError.isInstance(error)).toBe(true)
      expect((error as AgentResultEnvelopeError).missing).toEqual(['attempts'])
      expect((error as Error).message).toMatch(/attempts missing/)
    }
  })

  it('an envelope written before attempts existed reads as attempt 1 of 1 of its own logical call', () => {
    const { attempt: _a, attempts: _b, logicalCallId: _c, ...old } = failed
    expect(parseAgentResultEnvelope(old)).toMatchObject({ attempt: 1, attempts: 1, logicalCallId: 'call-1' })
  })

  it('refuses another schema tag and names the field', () => {
    expect(() => parseAgentResultEnvelope({ ...failed, schema: 'locus.agent.run-result.v1' })).toThrow(/schema:/)
    expect(() => parseAgentResultEnvelope('nope')).toThrow(/expected a JSON object/)
    expect(() => parseAgentResultEnvelope({ ...failed, failureCause: 'timeout' })).toThrow(/failureCause/)
  })
})
