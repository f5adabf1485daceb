// One run model: the outputs README, the summary `locus show`/`ls` and the end
// of `locus run` print, and the live progress tree are three readings of the
// same RunView, so over any journal they report the same agent calls,
// attempts, retries and tool calls.
import fc from 'fast-check'
import { type JournalLine, type ProgressCallNode, type ProgressNode, createRunView, progressTree, renderOutputsReadme } from '@locus/journal'
import { summarizeRunView } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { randomJournal } from '@locus/journal/testing'

interface Numbers {
  readonly agentCalls: number
  readonly agentAttempts: number
  readonly agentRetries: number
  readonly retriedAgentCalls: number
  readonly toolCalls: number
  readonly toolAttempts: number
  readonly toolRetries: number
}

/** The numbers the README prints in its summary lines. */
function readmeNumbers(readme: string): Numbers {
  const agents = /^- Agent calls: (\d+) \((\d+) attempts?, (\d+) retr(?:y|ies) across (\d+) calls?\)/m.exec(readme)
  if (agents === null) throw new Error(`no agent line in:\n${readme}`)
  const tools = /^- Tool calls: (\d+) \((\d+) attempts?, (\d+) retr(?:y|ies)\)/m.exec(readme)
  return {
    agentCalls: Number(agents[1]),
    agentAttempts: Number(agents[2]),
    agentRetries: Number(agents[3]),
    retriedAgentCalls: Number(agents[4]),
    // The README leaves the tool line out when no tool ran.
    toolCalls: tools === null ? 0 : Number(tools[1]),
    toolAttempts: tools === null ? 0 : Number(tools[2]),
    toolRetries: tools === null ? 0 : Number(tools[3]),
  }
}

function callsOf(nodes: readonly ProgressNode[]): ProgressCallNode[] {
  return nodes.flatMap((node) => (node.kind === 'group' ? callsOf(node.children) : [node]))
}

/** The numbers the live tree shows: one node a logical call, each with the attempts it started. */
function treeNumbers(lines: readonly JournalLine[]): Numbers & { readonly retried: readonly string[] } {
  const view = createRunView({ keep: 'all' })
  for (const line of lines) view.apply(line)
  const calls = callsOf(progressTree(view).roots)
  const of = (kind: 'agent' | 'tool') => calls.filter((node) => node.kind === kind)
  const attempts = (nodes: readonly ProgressCallNode[]) => nodes.reduce((total, node) => total + node.attemptsStarted, 0)
  return {
    agentCalls: of('agent').length,
    agentAttempts: attempts(of('agent')),
    agentRetries: attempts(of('agent')) - of('agent').length,
    retriedAgentCalls: of('agent').filter((node) => node.attemptsStarted > 1).length,
    toolCalls: of('tool').length,
    toolAttempts: attempts(of('tool')),
    toolRetries: attempts(of('tool')) - of('tool').length,
    retried: calls.filter((node) => node.attemptsStarted > 1).map((node) => `${node.kind}:${node.id}`),
  }
}

describe('the README, the summary and the progress tree agree', () => {
  it('over random journals: the same agent calls, attempts, retries and tool calls, and the same retried calls', () => {
    fc.assert(
      fc.property(randomJournal, (lines) => {
        // The runtime keeps the default (notable) view for the README and the summary; the tree keeps every call.
        const view = createRunView()
        for (const line of lines) view.apply(line)
        const readme = readmeNumbers(renderOutputsReadme(view))
        const summary = summarizeRunView(view, { outputsReadme: 'outputs/README.md' })
        const tree = treeNumbers(lines)

        expect(readme).toEqual({
          agentCalls: tree.agentCalls,
          agentAttempts: tree.agentAttempts,
          agentRetries: tree.agentRetries,
          retriedAgentCalls: tree.retriedAgentCalls,
          toolCalls: tree.toolCalls,
          toolAttempts: tree.toolAttempts,
          toolRetries: tree.toolRetries,
        })
        expect({
          agentCalls: summary.agentCalls,
          agentAttempts: summary.agentAttempts,
          toolCalls: summary.toolCalls,
          toolAttempts: summary.toolAttempts,
          retries: summary.retries,
        }).toEqual({
          agentCalls: tree.agentCalls,
          agentAttempts: tree.agentAttempts,
          toolCalls: tree.toolCalls,
          toolAttempts: tree.toolAttempts,
          retries: tree.agentRetries + tree.toolRetries,
        })
        expect(summary.retriedCalls.map((call) => `${call.kind}:${call.id}`).sort()).toEqual([...tree.retried].sort())
        expect(summary.retriedCalls.map((call) => call.attempts.length - 1).reduce((total, count) => total + count, 0)).toBe(summary.retries)
        // The README rendered from the lines folds them the same way.
        expect(renderOutputsReadme(lines)).toBe(renderOutputsReadme(view))
      }),
      { numRuns: 300 },
    )
  })
})
