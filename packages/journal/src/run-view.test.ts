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
