import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { randomJournal } from './testing.js'
import type { JournalLine, JournalLineInput } from './journal-line-schema.js'
import { type ProgressCallNode, type ProgressNode, progressTree } from './progress-tree.js'
import { createRunView } from './run-view.js'

function fold(lines: readonly JournalLine[]) {
  const view = createRunView({ keep: 'all' })
  for (const line of lines) view.apply(line)
  return view
}

function stamp(inputs: readonly JournalLineInput[]): JournalLine[] {
  return inputs.map((input, seq) => ({ ...input, v: 1, seq, ts: new Date(1_700_000_000_000 + seq * 10).toISOString(), runId: 'r', executionId: 'r' }))
}

function callsOf(nodes: readonly ProgressNode[]): ProgressCallNode[] {
  return nodes.flatMap((node) => (node.kind === 'group' ? callsOf(node.children) : [node]))
}

const agent = (logicalCallId: string, attempt: number, attempts: number, extra: Record<string, unknown> = {}) => ({
  callId: `${logicalCallId}-a${attempt}`,
  logicalCallId,
  attempt,
  attempts,
  agent: 'analyst',
  ordinal: logicalCallId,
  ...extra,
})

describe('progressTree', () => {
  it('shows a call as retrying at its boundary, then at attempt 2 of 2, inside its group', () => {
    const inputs: JournalLineInput[] = [
      { type: 'run_start', workflow: 'tree', input: null, options: {} },
      { type: 'group_start', groupId: 'g', groupKind: 'parallel', total: 2, label: 'pair' },
      { type: 'agent_start', ...agent('one', 1, 1, { groupId: 'g', label: 'one' }), prompt: 'p' },
      { type: 'agent_start', ...agent('two', 1, 2, { groupId: 'g', label: 'two' }), prompt: 'p' },
      { type: 'error', message: 'timeout', error: { name: 'HostError', code: 'HOST_ERROR', message: 'timeout' }, failureCause: 'host-turn-timeout', callId: 'two-a1', logicalCallId: 'two', attempt: 1, attempts: 2 },
      { type: 'retry', kind: 'agent', message: '[workflow:retry] agent "analyst" again', logicalCallId: 'two', callId: 'two-a1', fromAttempt: 1, toAttempt: 2, attempts: 2, cause: 'host-turn-timeout' },
    ]
    const lines = stamp(inputs)
    const retrying = progressTree(fold(lines))
    expect(retrying.workflow).toBe('tree')
    const group = retrying.roots[0]
    expect(group).toMatchObject({ kind: 'group', id: 'g', label: 'pair', status: 'running', total: 2 })
    expect(callsOf(retrying.roots).map((node) => [node.label, node.status, node.attempt, node.attempts, node.detail])).toEqual([
      ['one', 'running', 1, 1, undefined],
      ['two', 'retrying', 1, 2, 'host-turn-timeout'],
    ])

    const more: JournalLineInput[] = [
      { type: 'agent_start', ...agent('two', 2, 2, { groupId: 'g', label: 'two' }), prompt: 'p' },
      { type: 'agent_end', ...agent('one', 1, 1, { groupId: 'g', label: 'one' }), status: 'completed', durationMs: 1 },
      { type: 'agent_end', ...agent('two', 2, 2, { groupId: 'g', label: 'two' }), status: 'completed', durationMs: 1, replayed: true },
      { type: 'group_end', groupId: 'g', groupKind: 'parallel', total: 2, completed: 2, failed: 0, notDispatched: 0, outcome: 'completed' },
      { type: 'run_end', disposition: 'completed', ok: true, result: { ok: true }, durationMs: 5 },
    ]
    const done = progressTree(fold(stamp([...inputs, ...more])))
    expect(done.disposition).toBe('completed')
    expect(done.roots[0]).toMatchObject({ kind: 'group', status: 'completed', completed: 2 })
    expect(callsOf(done.roots).map((node) => [node.label, node.status, node.attempt, node.attemptsStarted, node.replayed])).toEqual([
      ['one', 'completed', 1, 1, false],
      ['two', 'completed', 2, 2, true],
    ])
  })

  it('marks what was still running when the run was cancelled as cancelled, and names a failed tool call’s cause', () => {
    const lines = stamp([
      { type: 'run_start', workflow: 'cut', input: null, options: {} },
      { type: 'tool_start', toolCallId: 'tool-1', tool: 'lookup', ordinal: '1', attempt: 1, maxAttempts: 1 },
      { type: 'tool_end', toolCallId: 'tool-1', tool: 'lookup', ordinal: '1', attempt: 1, maxAttempts: 1, status: 'failed', failure: { error: 'down', retryable: false, code: 'provider_error' }, durationMs: 1 },
      { type: 'agent_start', ...agent('slow', 1, 1), prompt: 'p' },
      { type: 'run_end', disposition: 'cancelled', ok: false, result: null, durationMs: 50 },
    ])
    const tree = progressTree(fold(lines))
    expect(tree.roots.map((node) => [node.kind, node.status, node.kind === 'group' ? undefined : node.detail])).toEqual([
      ['tool', 'failed', 'provider_error'],
      ['agent', 'cancelled', undefined],
    ])
    expect(tree.roots[1]?.endedAt).toBe(tree.endedAt)
  })

  it('over random journals, holds every call the view counts, with its attempts and retries', () => {
    fc.assert(
      fc.property(randomJournal, (lines) => {
        const view = fold(lines)
        const calls = callsOf(progressTree(view).roots)
        const agents = calls.filter((node) => node.kind === 'agent')
        const tools = calls.filter((node) => node.kind === 'tool')
        const sum = (nodes: readonly ProgressCallNode[]) => nodes.reduce((total, node) => total + node.attemptsStarted, 0)
        expect(agents).toHaveLength(view.counts.agentCalls)
        expect(sum(agents)).toBe(view.counts.agentAttempts)
        expect(sum(agents) - agents.length).toBe(view.counts.agentRetries)
        expect(tools).toHaveLength(view.counts.toolCalls)
        expect(sum(tools)).toBe(view.counts.toolAttempts)
        expect(sum(tools) - tools.length).toBe(view.counts.toolRetries)
        // A run that ended leaves no clock running.
        if (view.runEnd !== undefined) expect(calls.filter((node) => node.endedAt === undefined)).toEqual([])
      }),
      { numRuns: 200 },
    )
  })
})
