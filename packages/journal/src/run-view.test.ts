import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { randomJournal } from './testing.js'
import type { JournalLine } from './journal-line-schema.js'
import { parseJournalLine } from './parse-journal-line.js'
import { renderOutputsReadme } from './render-outputs-readme.js'
import { callOutcome, createRunView } from './run-view.js'

function fold(lines: readonly JournalLine[], keep: 'notable' | 'all' = 'notable') {
  const view = createRunView({ keep })
  for (const line of lines) view.apply(line)
  return view
}

/** The counts by their plain definitions, straight from the lines: the oracle. */
function oracle(lines: readonly JournalLine[]) {
  const agentAttempts = new Map<string, Set<string>>()
  const toolAttempts = new Map<string, Set<number>>()
  let replayedAgentCalls = 0
  let replayedToolCalls = 0
  for (const line of lines) {
    if (line.type === 'agent_start') agentAttempts.set(line.logicalCallId, (agentAttempts.get(line.logicalCallId) ?? new Set()).add(line.callId))
    if (line.type === 'tool_start') toolAttempts.set(line.toolCallId, (toolAttempts.get(line.toolCallId) ?? new Set()).add(line.attempt))
    if (line.type === 'agent_end' && line.replayed === true) replayedAgentCalls += 1
    if (line.type === 'tool_end' && line.replayed === true) replayedToolCalls += 1
  }
  const sum = (sizes: Iterable<number>): number => [...sizes].reduce((total, size) => total + size, 0)
  const agentSizes = [...agentAttempts.values()].map((set) => set.size)
  const toolSizes = [...toolAttempts.values()].map((set) => set.size)
  return {
    agentCalls: agentAttempts.size,
    agentAttempts: sum(agentSizes),
    agentRetries: sum(agentSizes.map((size) => size - 1)),
    retriedAgentCalls: agentSizes.filter((size) => size > 1).length,
    replayedAgentCalls,
    toolCalls: toolAttempts.size,
    toolAttempts: sum(toolSizes),
    toolRetries: sum(toolSizes.map((size) => size - 1)),
    retriedToolCalls: toolSizes.filter((size) => size > 1).length,
    replayedToolCalls,
  }
}

describe('createRunView', () => {
  it('every generated journal line is a valid line (the generator is honest)', () => {
    fc.assert(
      fc.property(randomJournal, (lines) => {
        for (const line of lines) expect(parseJournalLine(line)).toEqual(line)
      }),
      { numRuns: 50 },
    )
  })

  it('counts calls, attempts, retries and replays by their plain definitions', () => {
    fc.assert(
      fc.property(randomJournal, (lines) => {
        expect(fold(lines).counts).toMatchObject(oracle(lines))
      }),
    )
  })

  it('keeps the same counts and the same notable calls whether it keeps every call or only notable ones', () => {
    fc.assert(
      fc.property(randomJournal, (lines) => {
        const notable = fold(lines, 'notable')
        const all = fold(lines, 'all')
        expect(notable.counts).toEqual(all.counts)
        const ids = (calls: { id: string }[]) => calls.map((call) => call.id)
        expect(ids(notable.retriedCalls())).toEqual(ids(all.retriedCalls()))
        expect(ids(notable.failedCalls())).toEqual(ids(all.failedCalls()))
        expect(ids(notable.calls())).toEqual(ids(all.calls().filter((call) => call.attempts.length > 1 || callOutcome(call) !== 'completed')))
      }),
    )
  })

  it('ignores lines it has already applied, so a history and a live tail may overlap', () => {
    fc.assert(
      fc.property(randomJournal, fc.nat(), (lines, cut) => {
        const at = lines.length === 0 ? 0 : cut % lines.length
        const view = createRunView()
        for (const line of lines.slice(0, at + 1)) view.apply(line)
        for (const line of lines.slice(at > 2 ? at - 2 : 0)) view.apply(line)
        expect(view.counts).toEqual(fold(lines).counts)
        expect(view.lastSeq).toBe(lines.at(-1)?.seq ?? -1)
      }),
    )
  })

  it('agrees with the final outcomes: completed + failed + threw + unfinished = agent calls', () => {
    fc.assert(
      fc.property(randomJournal, (lines) => {
        const all = fold(lines, 'all')
        const outcomes = all.calls().filter((call) => call.kind === 'agent').map(callOutcome)
        const { counts } = all
        expect(counts.agentCompleted).toBe(outcomes.filter((outcome) => outcome === 'completed').length)
        expect(counts.agentThrew).toBe(outcomes.filter((outcome) => outcome === 'threw').length)
        expect(counts.agentFailed).toBe(outcomes.filter((outcome) => outcome === 'failed' || outcome === 'timed-out').length)
      }),
    )
  })

  it('groups a threw attempt under its logical call and leaves an error of no attempt loose', () => {
    const lines = [
      { v: 1, seq: 0, ts: '2026-01-01T00:00:00.000Z', runId: 'r', executionId: 'r', type: 'run_start', workflow: 'w', input: null, options: {} },
      { v: 1, seq: 1, ts: '2026-01-01T00:00:00.000Z', runId: 'r', executionId: 'r', type: 'error', message: 'unknown role', error: { name: 'E', code: 'X', message: 'unknown role' }, callId: 'call-1-a1' },
      { v: 1, seq: 2, ts: '2026-01-01T00:00:00.000Z', runId: 'r', executionId: 'r', type: 'agent_start', callId: 'call-2-a1', attempt: 1, attempts: 1, logicalCallId: 'call-2', agent: 'a', ordinal: '2', prompt: 'p' },
      { v: 1, seq: 3, ts: '2026-01-01T00:00:00.000Z', runId: 'r', executionId: 'r', type: 'error', message: 'no sdk', error: { name: 'E', code: 'X', message: 'no sdk' }, failureCause: 'sdk-unavailable', callId: 'call-2-a1', attempt: 1, attempts: 1, logicalCallId: 'call-2' },
    ] as JournalLine[]
    const view = fold(lines)
    expect(view.looseErrors.map((line) => line.seq)).toEqual([1])
    expect(view.counts.agentThrew).toBe(1)
    expect(view.failedCalls().map((call) => [call.id, callOutcome(call)])).toEqual([['call-2', 'threw']])
  })

  it('keeps the first cancel request of each execution: who asked, why and when', () => {
    const at = (seq: number, executionId: string, ts: string) => ({ v: 1, seq, ts, runId: 'r', executionId })
    const lines = [
      { ...at(0, 'r', '2026-01-01T00:00:00.000Z'), type: 'run_start', workflow: 'w', input: null, options: {} },
      { ...at(1, 'r', '2026-01-01T00:00:01.000Z'), type: 'run_cancel_requested', reason: 'first', by: 'cli' },
      { ...at(2, 'r', '2026-01-01T00:00:02.000Z'), type: 'run_cancel_requested', reason: 'second', by: 'key-1a2b3c4d' },
      { ...at(0, 'resume-001', '2026-01-01T00:01:00.000Z'), type: 'run_start', workflow: 'w', input: null, options: {} },
    ] as JournalLine[]
    const view = fold(lines)
    expect(view.executions().map((execution) => execution.cancelRequested)).toEqual([
      { reason: 'first', by: 'cli', at: '2026-01-01T00:00:01.000Z' },
      undefined,
    ])
  })
})

describe('deferrals in the fold', () => {
  /** A run of `deferred_open` / `deferred_settled` lines over three ids, split across two executions (a resume reopens nothing). */
  const events = fc.array(fc.record({ settle: fc.boolean(), id: fc.constantFrom('t-1-a1', 't-2-a1', 't-3-a1'), resumed: fc.boolean() }), { maxLength: 30 })

  it('lists the deferrals opened and not settled, first open first, and keeps the first answer of each', () => {
    fc.assert(
      fc.property(events, (steps) => {
        const lines = steps.map(({ settle, id, resumed }, seq) => {
          const base = { v: 1, seq, ts: new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString(), runId: 'r', executionId: resumed ? 'resume-001' : 'r' }
          return (
            settle
              ? { ...base, type: 'deferred_settled', deferredId: id, outcome: 'resolved', result: seq, decidedBy: 'ops', via: 'api' }
              : { ...base, type: 'deferred_open', deferredId: id, toolCallId: id.slice(0, 3), tool: 'approve', attempt: 1, args: { seq }, expiresAt: null }
          ) as JournalLine
        })
        // The oracle: an id is open from its first open until its first settle, and never again after it settled.
        const settled = new Map<string, number>()
        const opened = new Map<string, number>()
        for (const [seq, step] of steps.entries()) {
          if (step.settle) {
            if (!settled.has(step.id)) settled.set(step.id, seq)
          }
          else if (!settled.has(step.id) && !opened.has(step.id)) opened.set(step.id, seq)
        }
        const open = [...opened].filter(([id]) => !settled.has(id))
        const view = fold(lines)
        expect(view.openDeferrals().map((deferral) => [deferral.deferredId, deferral.args, deferral.executionId])).toEqual(
          open.map(([id, seq]) => [id, { seq }, steps[seq]?.resumed === true ? 'resume-001' : 'r']),
        )
        expect([...view.deferralSettlements()].map(([id, line]) => [id, line.result])).toEqual([...settled])
      }),
    )
  })
})

describe('every deferral in the fold: how it opened, expired and settled', () => {
  const steps = fc.array(fc.record({ kind: fc.constantFrom('open', 'expire', 'settle'), id: fc.constantFrom('t-1-a1', 't-2-a1', 't-3-a1') }), { maxLength: 40 })

  it('keeps each id’s first open (in open order), its latest expiry and its first settlement after it opened', () => {
    fc.assert(
      fc.property(steps, (events) => {
        const lines = events.map(({ kind, id }, seq) => {
          const base = { v: 1, seq, ts: new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString(), runId: 'r', executionId: 'r' }
          if (kind === 'open') return { ...base, type: 'deferred_open', deferredId: id, toolCallId: id.slice(0, 3), tool: 'approve', attempt: 1, args: { seq }, expiresAt: new Date(Date.UTC(2026, 0, 2, 0, 0, seq)).toISOString() } as JournalLine
          if (kind === 'expire') return { ...base, type: 'deferred_expired', deferredId: id, toolCallId: id.slice(0, 3), tool: 'approve', policy: { reject: 'too late' }, applied: 'rejected' } as unknown as JournalLine
          return { ...base, type: 'deferred_settled', deferredId: id, outcome: 'resolved', result: seq } as JournalLine
        })
        // The oracle, by the definitions: nothing counts for an id before its first open.
        const oracle = new Map<string, { open: number; expired?: number; settled?: number }>()
        for (const [seq, { kind, id }] of events.entries()) {
          const known = oracle.get(id)
          if (kind === 'open') {
            if (known === undefined) oracle.set(id, { open: seq })
          } else if (known !== undefined) {
            if (kind === 'expire') known.expired = seq
            else known.settled ??= seq
          }
        }
        const view = fold(lines)
        expect([...view.deferrals()].map(([id, deferral]) => [id, deferral.open.seq, deferral.expired?.seq, deferral.settled?.seq])).toEqual(
          [...oracle].map(([id, { open, expired, settled }]) => [id, open, expired, settled]),
        )
      }),
    )
  })
})

describe('the outputs README reads the same fold', () => {
  it('states the counts of the view, and the same README from lines as from a view kept while they were written', () => {
    fc.assert(
      fc.property(randomJournal, (lines) => {
        const view = createRunView()
        for (const line of lines) view.apply(line)
        const readme = renderOutputsReadme(view)
        expect(renderOutputsReadme(lines)).toBe(readme)
        const c = view.counts
        const unfinished = c.agentCalls - c.agentCompleted - c.agentFailed - c.agentThrew
        expect(readme).toContain(
          `- Agent calls: ${c.agentCalls} (${c.agentAttempts} attempt${c.agentAttempts === 1 ? '' : 's'}, ${c.agentRetries} ${c.agentRetries === 1 ? 'retry' : 'retries'} across ${c.retriedAgentCalls} call${c.retriedAgentCalls === 1 ? '' : 's'}); ` +
            `${c.agentCompleted} completed, ${c.agentFailed} failed, ${c.agentThrew} threw, ${unfinished} unfinished`,
        )
        const retriedSections = readme.split('\n').filter((line) => line.startsWith('### ')).length
        expect(retriedSections).toBe(c.retriedAgentCalls)
      }),
    )
  })
})

describe('one fold across the executions of a run', () => {
  const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms).toISOString()
  function line(executionId: string, seq: number, ms: number, fields: Record<string, unknown>): JournalLine {
    return { v: 1, seq, ts: at(ms), runId: 'r', executionId, ...fields } as JournalLine
  }
  const trio = (call: string, attempt: number) => ({ callId: `${call}-a${attempt}`, attempt, attempts: 2, logicalCallId: call, agent: 'a', ordinal: call.slice(5) })
  // The root retried a tool, then its process died inside the agent call: no run_end.
  const root = [
    line('r', 0, 0, { type: 'run_start', workflow: 'w', input: null, options: {} }),
    line('r', 1, 10, { type: 'tool_start', toolCallId: 'tool-1', tool: 't', attempt: 1, maxAttempts: 3, ordinal: '1' }),
    line('r', 2, 20, { type: 'tool_end', toolCallId: 'tool-1', tool: 't', attempt: 1, maxAttempts: 3, ordinal: '1', status: 'failed', durationMs: 10, failure: { error: 'x', retryable: true } }),
    line('r', 3, 20, { type: 'retry', kind: 'tool', message: '[workflow:retry] t', callId: 'tool-1', fromAttempt: 1, toAttempt: 2, attempts: 3, cause: 'provider_error' }),
    line('r', 4, 30, { type: 'tool_start', toolCallId: 'tool-1', tool: 't', attempt: 2, maxAttempts: 3, ordinal: '1' }),
    line('r', 5, 40, { type: 'tool_end', toolCallId: 'tool-1', tool: 't', attempt: 2, maxAttempts: 3, ordinal: '1', status: 'completed', durationMs: 10, result: 1 }),
    line('r', 6, 50, { type: 'agent_start', ...trio('call-2', 1), prompt: 'p' }),
    line('r', 7, 60, { type: 'llm_attempt', ...trio('call-2', 1), model: 'm', turn: 1, step: 1, llmAttempt: 1, llmMaxAttempts: 1, outcome: 'failed', durationMs: 10, streamed: false }),
    line('r', 8, 60, { type: 'agent_end', ...trio('call-2', 1), status: 'failed', failureCause: 'provider-error', durationMs: 10 }),
    line('r', 9, 60, { type: 'retry', kind: 'agent', message: '[workflow:retry] a', logicalCallId: 'call-2', callId: 'call-2-a1', fromAttempt: 1, toAttempt: 2, attempts: 2, cause: 'provider-error' }),
    line('r', 10, 70, { type: 'agent_start', ...trio('call-2', 2), prompt: 'p' }),
  ]
  // The resume served the tool from the journal, and ran the agent call again from its first attempt.
  const resume = [
    line('resume-001', 0, 1000, { type: 'run_start', workflow: 'w', input: null, options: {}, resumeOf: 'r' }),
    line('resume-001', 1, 1000, { type: 'tool_start', toolCallId: 'tool-1', tool: 't', attempt: 2, maxAttempts: 3, ordinal: '1' }),
    line('resume-001', 2, 1000, { type: 'tool_end', toolCallId: 'tool-1', tool: 't', attempt: 2, maxAttempts: 3, ordinal: '1', status: 'completed', durationMs: 0, result: 1, replayed: true }),
    line('resume-001', 3, 1001, { type: 'agent_start', ...trio('call-2', 1), prompt: 'p' }),
    line('resume-001', 4, 1005, { type: 'llm_attempt', ...trio('call-2', 1), model: 'm', turn: 1, step: 1, llmAttempt: 1, llmMaxAttempts: 1, outcome: 'succeeded', durationMs: 4, streamed: false }),
    line('resume-001', 5, 1005, { type: 'agent_end', ...trio('call-2', 1), status: 'completed', durationMs: 4, answer: 'ok' }),
    line('resume-001', 6, 1007, { type: 'run_end', disposition: 'completed', ok: true, result: 'ok', durationMs: 7 }),
  ]

  it('adds up every execution: retries, attempts and LLM requests before the resume, the root’s start, both durations', () => {
    for (const keep of ['notable', 'all'] as const) {
      const view = fold([...root, ...resume], keep)
      expect(view.counts).toMatchObject({ toolCalls: 1, toolAttempts: 2, toolRetries: 1, replayedToolCalls: 1, agentCalls: 1, agentAttempts: 3, agentRetries: 2, agentCompleted: 1, agentFailed: 0, llmAttempts: 2 })
      expect(view.runStart?.executionId).toBe('r')
      expect(view.executionId).toBe('resume-001')
      expect(view.disposition).toBe('completed')
      // The root has no run_end: its time is what its lines span (70 ms), the resume's is its run_end's.
      expect(view.durationMs).toBe(77)
      expect(view.executions().map((execution) => [execution.executionId, execution.durationMs, execution.ended])).toEqual([
        ['r', 70, false],
        ['resume-001', 7, true],
      ])
      expect(view.retriedCalls().map((call) => call.id)).toEqual(['tool-1', 'call-2'])
    }
  })

  it('counts an attempt its execution never finished and a resume ran again once', () => {
    const tool = { toolCallId: 'tool-1', tool: 't', attempt: 1, maxAttempts: 1, ordinal: '1' }
    const view = fold(
      [
        line('r', 0, 0, { type: 'run_start', workflow: 'w', input: null, options: {} }),
        line('r', 1, 5, { type: 'tool_start', ...tool }),
        line('resume-001', 0, 100, { type: 'run_start', workflow: 'w', input: null, options: {}, resumeOf: 'r' }),
        line('resume-001', 1, 100, { type: 'tool_start', ...tool }),
        line('resume-001', 2, 110, { type: 'tool_end', ...tool, status: 'completed', durationMs: 10, result: 1 }),
      ],
      'all',
    )
    expect(view.counts).toMatchObject({ toolCalls: 1, toolAttempts: 1, toolRetries: 0 })
    expect(view.calls().map((call) => call.attempts.map((attempt) => [attempt.executionId, attempt.status]))).toEqual([[['resume-001', 'completed']]])
  })

  it('keeps each execution’s own figures apart', () => {
    const own = fold(resume)
    expect(own.counts).toMatchObject({ toolRetries: 0, replayedToolCalls: 1, agentAttempts: 1, llmAttempts: 1 })
    expect(own.durationMs).toBe(7)
  })

  it('reads a resumed run as running again until its new execution ends', () => {
    const cancelled = [...root, line('r', 11, 80, { type: 'run_end', disposition: 'cancelled', ok: false, result: null, durationMs: 80 })]
    const view = fold([...cancelled, ...resume.slice(0, 3)])
    expect(view.runEnd).toBeUndefined()
    expect(view.durationMs).toBeUndefined()
    for (const next of resume.slice(3)) view.apply(next)
    expect(view.durationMs).toBe(87)
  })

  it('never counts a line twice when a history and a live tail of the latest execution overlap', () => {
    const view = fold([...root, ...resume.slice(0, 5)])
    for (const again of resume.slice(2)) view.apply(again)
    expect(view.counts).toEqual(fold([...root, ...resume]).counts)
    expect(view.lastSeq).toBe(6)
  })
})
