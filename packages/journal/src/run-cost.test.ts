import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { JournalLine, JournalLineInput } from './journal-line-schema.js'
import { parseJournalLine } from './parse-journal-line.js'
import { renderOutputsReadme } from './render-outputs-readme.js'
import { createRunView } from './run-view.js'
import { addUsd } from './usd-sum.js'

const micro = (amount: bigint): string => `${String(amount / 1_000_000n)}.${String(amount % 1_000_000n).padStart(6, '0')}`

describe('addUsd', () => {
  it('adds decimal strings exactly, as integers of their smallest place', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 15n }), fc.bigInt({ min: 0n, max: 10n ** 15n }), (a, b) => {
        expect(addUsd(micro(a), micro(b))).toBe(micro(a + b))
      }),
    )
  })

  it('keeps more places than six when a price needs them', () => {
    expect(addUsd('0.0000015', '0.000001')).toBe('0.0000025')
    expect(addUsd('0.000000', '0.000000')).toBe('0.000000')
    expect(addUsd('2.5', '0.000001')).toBe('2.500001')
  })
})

let seq = 0
function stamp(input: JournalLineInput): JournalLine {
  seq += 1
  return parseJournalLine({ v: 1, seq, ts: '2026-12-05T10:00:00.000Z', runId: 'run-c', executionId: 'run-c', ...input })
}

const TABLE = 'sha256:0123456789abcdef'
const call = (callId: string, attempt: number) => ({ callId, logicalCallId: 'agent-1', attempt, attempts: 2, agent: 'writer', ordinal: '1' })
const request = (callId: string, attempt: number, outcome: 'succeeded' | 'failed', cost: { usd: string } | { unpriced: true; model: string }, llmAttempt = 1) =>
  stamp({
    type: 'llm_attempt',
    ...call(callId, attempt),
    model: 'm',
    turn: 1,
    step: 1,
    llmAttempt,
    llmMaxAttempts: 2,
    outcome,
    durationMs: 1,
    streamed: false,
    cost: { ...cost, table: TABLE },
  })

describe('RunView.cost', () => {
  it('sums every priced request, counts unpriced ones apart, and puts thrown-away attempts in the retry overhead', () => {
    const view = createRunView()
    const lines = [
      stamp({ type: 'run_start', workflow: 'w', input: null, options: {} }),
      stamp({ type: 'agent_start', ...call('agent-1-a1', 1), prompt: 'p' }),
      request('agent-1-a1', 1, 'failed', { usd: '0.000100' }),
      request('agent-1-a1', 1, 'succeeded', { usd: '0.002000' }, 2),
      stamp({ type: 'agent_end', ...call('agent-1-a1', 1), status: 'failed', failureCause: 'empty-answer', durationMs: 3 }),
      stamp({ type: 'retry', kind: 'agent', message: '[workflow:retry] again', logicalCallId: 'agent-1', callId: 'agent-1-a1', fromAttempt: 1, toAttempt: 2, attempts: 2, cause: 'empty-answer' }),
      stamp({ type: 'agent_start', ...call('agent-1-a2', 2), prompt: 'p' }),
      request('agent-1-a2', 2, 'succeeded', { usd: '0.003000' }),
      request('agent-1-a2', 2, 'succeeded', { unpriced: true, model: 'my-fine-tune' }),
      stamp({ type: 'agent_end', ...call('agent-1-a2', 2), status: 'completed', answer: 'ok', durationMs: 3 }),
    ]
    for (const line of lines) view.apply(line)
    expect(view.cost).toEqual({ usd: '0.005100', retryOverheadUsd: '0.002100', unpricedRequests: 1, table: TABLE })
  })

  it('prices an attempt from its agent_end when the host reported no requests, and a replayed answer at nothing', () => {
    const view = createRunView()
    view.apply(stamp({ type: 'run_start', workflow: 'w', input: null, options: {} }))
    view.apply(stamp({ type: 'agent_start', ...call('agent-1-a1', 1), prompt: 'p' }))
    view.apply(stamp({ type: 'agent_end', ...call('agent-1-a1', 1), status: 'completed', answer: 'a', durationMs: 1, cost: { usd: '0.000420', table: TABLE } }))
    view.apply(stamp({ type: 'agent_end', ...call('agent-2-a1', 1), logicalCallId: 'agent-2', ordinal: '2', status: 'completed', answer: 'b', durationMs: 0, replayed: true, cost: { usd: '9.000000', table: TABLE } }))
    expect(view.cost).toEqual({ usd: '0.000420', retryOverheadUsd: '0.000000', unpricedRequests: 0, table: TABLE })
  })

  it('is undefined for a run that was not priced', () => {
    const view = createRunView()
    view.apply(stamp({ type: 'run_start', workflow: 'w', input: null, options: {} }))
    expect(view.cost).toBeUndefined()
  })

  it('adds each child run’s cost from its child_end, a retried spawn attempt’s as overhead, and a replayed spawn at nothing', () => {
    const view = createRunView()
    const spawn = (attempt: number) => ({ childCallId: 'child-1', workflow: 'kid', attempt, maxAttempts: 2, ordinal: '1', childExecutionId: `child-1-a${String(attempt)}` })
    view.apply(stamp({ type: 'run_start', workflow: 'w', input: null, options: {} }))
    view.apply(stamp({ type: 'child_start', ...spawn(1) }))
    // The child's own retries cost 0.000200 of its 0.000500.
    view.apply(stamp({ type: 'child_end', ...spawn(1), status: 'failed', disposition: 'failed', durationMs: 1, cost: { usd: '0.000500', retryOverheadUsd: '0.000200', unpriced: 1, table: TABLE } }))
    view.apply(stamp({ type: 'retry', kind: 'child', message: '[workflow:retry] again', callId: 'child-1', fromAttempt: 1, toAttempt: 2, attempts: 2, cause: 'child-failed' }))
    view.apply(stamp({ type: 'child_start', ...spawn(2) }))
    view.apply(stamp({ type: 'child_end', ...spawn(2), status: 'completed', disposition: 'completed', result: 1, durationMs: 1, cost: { usd: '0.000030', retryOverheadUsd: '0.000000', table: TABLE } }))
    view.apply(stamp({ type: 'child_end', ...spawn(1), childCallId: 'child-2', ordinal: '2', status: 'completed', disposition: 'completed', result: 1, durationMs: 0, replayed: true, cost: { usd: '7.000000', retryOverheadUsd: '0.000000', table: TABLE } }))
    expect(view.cost).toEqual({ usd: '0.000530', retryOverheadUsd: '0.000500', unpricedRequests: 1, table: TABLE })
    expect(view.children().map((spawned) => [spawned.id, spawned.cost])).toEqual([
      ['child-1', { usd: '0.000530', retryOverheadUsd: '0.000500', unpricedRequests: 1 }],
      ['child-2', undefined],
    ])
  })

  it('refuses a cost written as a float or without its table', () => {
    expect(() => request('agent-1-a1', 1, 'succeeded', { usd: 0.002 as unknown as string })).toThrow()
    expect(() => stamp({ type: 'agent_end', ...call('x-a1', 1), status: 'completed', durationMs: 1, cost: { usd: '0.1' } } as JournalLineInput)).toThrow()
  })
})

describe('the outputs README of a priced run', () => {
  it('has a Cost section with the exact total, the retry overhead and the requests with no price', () => {
    const lines = [
      stamp({ type: 'run_start', workflow: 'w', input: null, options: {} }),
      request('agent-1-a1', 1, 'failed', { usd: '0.000100' }),
      request('agent-1-a1', 1, 'succeeded', { unpriced: true, model: 'my-fine-tune' }, 2),
      stamp({ type: 'run_end', disposition: 'completed', ok: true, result: null, durationMs: 4 }),
    ]
    const readme = renderOutputsReadme(lines)
    expect(readme).toContain(`## Cost\n\n- LLM requests: $0.000100 (price table \`${TABLE}\`)\n- Retry overhead: $0.000100, spent on requests that failed and on agent attempts and child runs that were retried\n- Not priced: 1 request to a model with no price (give its price with \`--prices\`)\n`)
  })

  it('has no Cost section when the run was not priced', () => {
    expect(renderOutputsReadme([stamp({ type: 'run_start', workflow: 'w', input: null, options: {} })])).not.toContain('## Cost')
  })
})
