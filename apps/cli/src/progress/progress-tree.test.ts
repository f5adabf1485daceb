import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type JournalLine, type JournalLineInput, type ProgressCallNode, type ProgressNode, createRunView, progressTree } from '@locus/journal'
import { createScriptedHost, defineWorkflow, runWorkflowScript } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { styleFor } from '../style.js'
import { createProgressReporter } from './progress-reporter.js'
import { renderProgressTree } from './render-progress-tree.js'

const plain = styleFor({ write: () => true }, {})

/** A real run's journal lines: two calls fanned out, one retried after a host timeout. */
async function recordedLines(): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  const workflow = defineWorkflow({
    name: 'tree',
    async run({ agent, parallel }) {
      const [first, second] = await parallel(
        [() => agent('first', { label: 'one' }), () => agent('second', { label: 'two', attempts: 2 })],
        { label: 'pair' },
      )
      return { ok: true, answers: [first.answer, second.answer] }
    },
  })
  const host = createScriptedHost({
    rules: [
      { match: { label: 'two' }, steps: [{ throw: 'host-turn-timeout' }, { text: 'second answer' }] },
      { steps: [{ text: 'first answer' }] },
    ],
  })
  await runWorkflowScript(workflow, { host, runsDir: await mkdtemp(join(tmpdir(), 'locus-tree-')), onEvent: (line) => lines.push(line) })
  return lines
}

function treeOf(lines: readonly JournalLine[]) {
  const view = createRunView({ keep: 'all' })
  for (const line of lines) view.apply(line)
  return progressTree(view)
}

function callsOf(nodes: readonly ProgressNode[]): ProgressCallNode[] {
  return nodes.flatMap((node) => (node.kind === 'group' ? callsOf(node.children) : [node]))
}

describe('the progress tree of a run (the RunView fold, rendered)', () => {
  it('shows a retried call as retrying at the boundary, then as attempt 2 of 2 (the issue: "attempt n of m", "retry boundaries as they happen")', async () => {
    const lines = await recordedLines()
    const boundary = lines.findIndex((line) => line.type === 'retry')
    const retrying = callsOf(treeOf(lines.slice(0, boundary + 1)).roots).find((node) => node.kind === 'agent' && node.label === 'two')
    expect(retrying).toMatchObject({ status: 'retrying', attempt: 1, attempts: 2, detail: 'host-turn-timeout' })

    const tree = treeOf(lines)
    expect(tree.disposition).toBe('completed')
    expect(callsOf(tree.roots).map((node) => [node.label, node.status, node.attempt])).toEqual([
      ['one', 'completed', 1],
      ['two', 'completed', 2],
    ])
  })

  it('renders groups with their calls indented beneath, status, attempt and elapsed time', async () => {
    const rendered = renderProgressTree(treeOf(await recordedLines()), { now: Date.now(), style: plain })
    expect(rendered[0]).toMatch(/^tree {2}completed/)
    expect(rendered[1]).toMatch(/^ {2}✔ parallel \S+ "pair" {2}2\/2 completed/)
    expect(rendered.slice(2).join('\n')).toMatch(/ {4}✔ agent default \S+ "two" {2}attempt 2\/2 {2}\d+ms/)
  })

  it('folds completed calls of a big group and cuts at maxLines', () => {
    const ts = '2026-01-01T00:00:00.000Z'
    const inputs: JournalLineInput[] = [
      { type: 'run_start', workflow: 'big', input: null, options: null },
      { type: 'group_start', groupId: 'g', groupKind: 'parallel', total: 20 },
    ]
    for (let index = 0; index < 20; index += 1) {
      const call = { callId: `c${index}`, logicalCallId: `l${index}`, attempt: 1, attempts: 1, agent: 'a', ordinal: `g[${index}].1`, groupId: 'g' }
      inputs.push({ type: 'agent_start', ...call, prompt: 'p' })
      if (index < 15) inputs.push({ type: 'agent_end', ...call, status: 'completed', durationMs: 1 })
    }
    const lines: JournalLine[] = inputs.map((input, seq) => ({ ...input, v: 1 as const, seq, ts, runId: 'r', executionId: 'r' }))
    const tree = treeOf(lines)
    const rendered = renderProgressTree(tree, { now: Date.parse(ts), style: plain })
    expect(rendered.filter((line) => line.includes('• agent a'))).toHaveLength(5)
    expect(rendered.at(-1)).toMatch(/✔ 15 more completed/)
    expect(rendered[1]).toMatch(/20 slots: 5 running, 15 done/)
    const cut = renderProgressTree(tree, { now: Date.parse(ts), style: plain, maxLines: 4 })
    expect(cut).toHaveLength(4)
    expect(cut.at(-1)).toMatch(/\.\.\. \d+ more lines/)
  })
})

describe('progress reporters', () => {
  it('tree mode redraws in place with ANSI cursor movement and prints retry boundaries above the tree', async () => {
    let written = ''
    const stream = { write: (text: string) => (written += text), isTTY: true, columns: 120 }
    const reporter = createProgressReporter('tree', stream, plain, { rows: () => 40 })
    for (const line of await recordedLines()) reporter.onEvent(line)
    reporter.finish()
    // eslint-disable-next-line no-control-regex -- the ANSI sequences are what is under test
    expect(written).toMatch(/\u001b\[\d+A\r\u001b\[0J/)
    expect(written).toMatch(/\[workflow:retry\] agent "default"/)
    expect(written.trimEnd().split('\n').at(-1)).toMatch(/✔ agent default/)
  })

  it('plain mode writes one line per event and no escape codes; json mode writes the journal lines', async () => {
    const lines = await recordedLines()
    let plainText = ''
    const plainReporter = createProgressReporter('plain', { write: (text: string) => (plainText += text) }, plain)
    for (const line of lines) plainReporter.onEvent(line)
    expect(plainText).not.toContain('\u001b')
    expect(plainText).toMatch(/agent default \S+ attempt 2\/2 completed/)
    let jsonText = ''
    const jsonReporter = createProgressReporter('json', { write: (text: string) => (jsonText += text) }, plain)
    for (const line of lines) jsonReporter.onEvent(line)
    expect(jsonText.trim().split('\n').map((text) => JSON.parse(text) as unknown)).toEqual(JSON.parse(JSON.stringify(lines)))
  })
})

describe('streamed progress in the live tree', () => {
  it('shows the tokens so far on a running agent call, and nothing once it ended', async () => {
    const { renderProgressTree } = await import('./render-progress-tree.js')
    const plainStyle = styleFor({ isTTY: false } as never, { NO_COLOR: '1' })
    const view = createRunView({ keep: 'all' })
    const common = { v: 1 as const, runId: 'r', executionId: 'r', ts: new Date(0).toISOString() }
    view.apply({ ...common, seq: 1, type: 'run_start', workflow: 'wf', input: null, options: {} })
    view.apply({ ...common, seq: 2, type: 'agent_start', callId: 'c1', logicalCallId: 'lc1', attempt: 1, attempts: 1, agent: 'writer', ordinal: '1', prompt: 'p' })
    const tokens = new Map([['lc1', 42]])
    const running = renderProgressTree(progressTree(view), { now: 10, style: plainStyle, tokens }).join('\n')
    expect(running).toContain('42 tokens')
    view.apply({ ...common, seq: 3, type: 'agent_end', callId: 'c1', logicalCallId: 'lc1', attempt: 1, attempts: 1, agent: 'writer', ordinal: '1', status: 'completed', durationMs: 5, answer: 'x' })
    expect(renderProgressTree(progressTree(view), { now: 10, style: plainStyle, tokens }).join('\n')).not.toContain('tokens')
  })
})
