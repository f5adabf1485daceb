import { describe, expect, it } from 'vitest'
import { inCliWords } from './cli-words.js'
import { RESULT_BYTE_LIMIT, cutForTerminal, formatResult, formatSummary } from './format-summary.js'

const where = { resultFile: '/work/runs/big/result.json', cwd: '/work' }

describe('formatResult cuts long results by lines and by bytes', () => {
  it('a 50 MB value on a single line prints a few kilobytes and says where the whole is', () => {
    const blob = 'x'.repeat(50 * 1024 * 1024)
    const text = formatResult(blob, 'completed', where)
    expect(Buffer.byteLength(text)).toBeLessThan(RESULT_BYTE_LIMIT + 200)
    const lines = text.split('\n')
    expect(lines).toHaveLength(2)
    expect(lines[1]).toMatch(/^… \d+ more bytes; full result in runs\/big\/result\.json$/)
    // What is shown plus what is left out is the whole rendering.
    const more = Number(/… (\d+) more bytes/.exec(text)?.[1])
    expect(Buffer.byteLength(lines[0] ?? '') + more).toBe(blob.length + 2)
  })

  it('a large value inside an object is cut within its line, and the lines after it are counted', () => {
    const text = formatResult({ ok: true, blob: 'y'.repeat(1024 * 1024) }, 'completed', where)
    expect(Buffer.byteLength(text)).toBeLessThan(RESULT_BYTE_LIMIT + 200)
    expect(text.split('\n').at(-1)).toMatch(/^… \d+ more bytes \(1 more line\); full result in runs\/big\/result\.json$/)
  })

  it('many short lines are still cut at 40, with the count of lines left out', () => {
    const text = formatResult(Array.from({ length: 100 }, (_, index) => ({ index, padding: 'p'.repeat(90) })), 'completed', where)
    const lines = text.split('\n')
    expect(lines).toHaveLength(41)
    expect(lines.at(-1)).toMatch(/^… \d+ more bytes \(\d+ more lines\); full result in runs\/big\/result\.json$/)
  })

  it('a short result is printed whole, and an unfinished run has none yet', () => {
    expect(formatResult({ ok: true }, 'completed', where)).toBe('{ "ok": true }')
    expect(formatResult(null, 'unfinished', where)).toMatch(/none yet/)
  })

  it('never splits a multi-byte character', () => {
    const cut = cutForTerminal('é'.repeat(10), { maxLines: 40, maxBytes: 5, where: 'result.json' })
    expect(cut.split('\n')[0]).toBe('éé')
    expect(cut).toMatch(/… 16 more bytes; full result in result\.json$/)
  })
})

describe('runtime messages in the words of the command line', () => {
  it('names the flag a CLI user sets, not the run option', () => {
    expect(inCliWords('attempt 3 would exceed maxTotalAgentInvocations = 2; raise maxTotalAgentInvocations in the run options')).toBe(
      'attempt 3 would exceed --max-agents = 2; raise --max-agents in the run options',
    )
    expect(inCliWords('the run passed its deadline (deadlineMs 50)')).toBe('the run passed its deadline (--deadline 50)')
    expect(inCliWords('nothing to change here')).toBe('nothing to change here')
  })
})

describe('formatSummary', () => {
  const plain = { bold: (text: string) => text, dim: (text: string) => text, red: (text: string) => text, green: (text: string) => text, yellow: (text: string) => text }
  const base = {
    runId: 'r1', executionId: 'r1', workflow: 'wf', standing: 'failed' as const, startedAt: undefined, durationMs: 5, source: undefined, host: undefined,
    agentCalls: 1, agentAttempts: 1, replayedCalls: 0, toolCalls: 0, toolAttempts: 0, retries: 0, retriedCalls: [], repairedChoices: [], gaps: [], caveats: [], result: null,
    error: 'attempt 2 would exceed maxTotalAgentInvocations = 1', outputsReadme: '/tmp/x/README.md', journalProblems: [], llmAttempts: 3, llmRetries: 2, retriesRefused: 1,
    childCalls: 0, childCompleted: 0, childFailed: 0, children: [],
  }
  it('shows the host’s LLM retries and refused retries apart from the calls’ retries, and errors in CLI words', () => {
    const text = formatSummary({ ...base, resultPath: '/tmp/x/result.json', nothingRecorded: false }, { cwd: '/tmp', style: plain as never, includeResult: false })
    expect(text).toContain('retries:  0')
    expect(text).toContain("llm:      3 LLM request attempts, 2 retries by the model host's policy")
    expect(text).toContain('refused:  1 retry refused by the run')
    expect(text).toContain('--max-agents = 1')
    expect(text).not.toContain('maxTotalAgentInvocations')
  })

  it('says which choice answers were repaired, and how (issue 30)', () => {
    const repairedChoices = [
      { agent: 'triage', callId: 'call-1-a1', from: 'probably high-ish', to: 'high', via: 'clarification' as const },
      { agent: 'triage', callId: 'call-2-a1', from: 'maybe', to: 'no', via: 'fallback' as const },
    ]
    const text = formatSummary({ ...base, repairedChoices, resultPath: undefined, nothingRecorded: false }, { cwd: '/tmp', style: plain as never, includeResult: false })
    expect(text).toContain('repaired: 2 choice answers: triage said "probably high-ish", took high when asked again; triage said "maybe", took no as its fallback')
    expect(formatSummary({ ...base, resultPath: undefined, nothingRecorded: false }, { cwd: '/tmp', style: plain as never, includeResult: false })).not.toContain('repaired:')
  })

  it('lists the spawned child workflows with their dispositions, and says nothing of children when there are none', () => {
    const children = [
      { id: 'child-1', workflow: 'enrich', attempts: 1, childExecutionId: 'child-1-a1', disposition: 'completed' as const, replayed: true },
      { id: 'child-2', workflow: 'score', attempts: 2, childExecutionId: 'child-2-a2', disposition: 'failed' as const, replayed: false },
    ]
    const text = formatSummary({ ...base, childCalls: 2, childCompleted: 1, childFailed: 1, children, resultPath: undefined, nothingRecorded: false }, { cwd: '/tmp', style: plain as never, includeResult: false })
    expect(text).toContain('children: 2 (1 completed, 1 failed): enrich child-1-a1 completed (replayed); score child-2-a2 failed')
    expect(formatSummary({ ...base, resultPath: undefined, nothingRecorded: false }, { cwd: '/tmp', style: plain as never, includeResult: false })).not.toContain('children:')
  })
})
