import { describe, expect, it } from 'vitest'
import type { JournalLine, JournalLineInput } from './journal-line-schema.js'
import { isValidLineFast } from './line-fast-path.js'
import { parseJournalLine } from './parse-journal-line.js'
import { renderOutputsReadme } from './render-outputs-readme.js'
import { createRunView } from './run-view.js'

function stamp(input: JournalLineInput, seq: number): JournalLine {
  return { v: 1, seq, ts: '2026-09-22T16:21:00.000Z', runId: 'run-1', executionId: 'run-1', ...input }
}

const trio = { logicalCallId: 'call-1', attempt: 1, attempts: 2 }

// A call whose retry the invocation cap refused, then a tool whose retry the run deadline refused.
const lines: JournalLine[] = [
  stamp({ type: 'run_start', workflow: 'w', input: null, options: {} }, 1),
  stamp({ type: 'agent_start', callId: 'call-1-a1', ...trio, agent: 'default', ordinal: '1', prompt: 'x' }, 2),
  stamp(
    {
      type: 'agent_end',
      callId: 'call-1-a1',
      ...trio,
      agent: 'default',
      ordinal: '1',
      status: 'failed',
      failureCause: 'call-timeout',
      durationMs: 10,
      retryRefused: { by: 'invocation-cap' },
    },
    3,
  ),
  stamp({ type: 'tool_start', toolCallId: 'tool-2', tool: 'flaky', attempt: 1, maxAttempts: 3, ordinal: '2' }, 4),
  stamp(
    {
      type: 'tool_end',
      toolCallId: 'tool-2',
      tool: 'flaky',
      attempt: 1,
      maxAttempts: 3,
      ordinal: '2',
      status: 'failed',
      failure: { error: 'upstream 503', retryable: true, code: 'provider_error' },
      durationMs: 3,
      retryRefused: { by: 'run-deadline', delayMs: 1000 },
    },
    5,
  ),
  stamp({ type: 'run_end', disposition: 'failed', ok: false, result: null, durationMs: 12 }, 6),
]

describe('retryRefused: a retry the run refused is journaled on the attempt it would have followed', () => {
  it('is accepted by the schema and the fast path alike, on agent_end, error and tool_end', () => {
    const error = stamp(
      { type: 'error', message: 'threw', error: { name: 'HostError', code: 'HOST_ERROR', message: 'threw' }, failureCause: 'host-turn-timeout', callId: 'call-1-a1', ...trio, retryRefused: { by: 'retry-budget' } },
      7,
    )
    for (const line of [lines[2], lines[4], error]) {
      expect(isValidLineFast(line, false)).toBe(true)
      expect(parseJournalLine(line)).toEqual(line)
    }
  })

  it('refuses an unknown refuser and a negative delay', () => {
    expect(() => parseJournalLine({ ...lines[2], retryRefused: { by: 'the weather' } })).toThrow(/retryRefused/)
    expect(() => parseJournalLine({ ...lines[4], retryRefused: { by: 'run-deadline', delayMs: -1 } })).toThrow(/retryRefused/)
  })

  it('is counted by the run view apart from retries that ran', () => {
    const view = createRunView()
    for (const line of lines) view.apply(line)
    expect(view.counts.retriesRefused).toBe(2)
    expect(view.counts.agentRetries).toBe(0)
    expect(view.counts.toolRetries).toBe(0)
    expect(view.refusedRetries.map((line) => line.retryRefused.by)).toEqual(['invocation-cap', 'run-deadline'])
  })

  it('is shown in the outputs README, and a refused retry is not counted as a retry', () => {
    const readme = renderOutputsReadme(lines)
    expect(readme).toContain('(1 attempt, 0 retries across 0 calls)')
    expect(readme).toContain('- Retries refused: 2 (1 by the invocation cap, 1 by the run deadline)')
    expect(readme).toContain('## Refused retries')
    expect(readme).toContain('- agent call `call-1` attempt 1/2 (`call-1-a1`) ended `call-timeout`; its retry was refused by the invocation cap')
    expect(readme).toContain(
      '- tool `flaky` `tool-2` attempt 1/3 ended `provider_error`: upstream 503; its retry was refused by the run deadline (it would have waited 1.0 s first)',
    )
  })
})
