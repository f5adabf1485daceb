import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { ChildEndLine, ChildStartLine, JournalLine, JournalLineInput } from './journal-line-schema.js'
import { parseJournalLine } from './parse-journal-line.js'
import { progressTree } from './progress-tree.js'
import { renderOutputsReadme } from './render-outputs-readme.js'
import { createRunView } from './run-view.js'

function stamp(inputs: readonly JournalLineInput[]): JournalLine[] {
  return inputs.map((input, seq) => parseJournalLine({ v: 1, seq, ts: '2026-12-03T10:00:00.000Z', runId: 'run-1', executionId: 'run-1', ...input }))
}

const place = { childCallId: 'child-1', workflow: 'enrich', maxAttempts: 2, ordinal: '1' }

function start(attempt: number): Omit<ChildStartLine, 'v' | 'seq' | 'ts' | 'runId' | 'executionId'> {
  return { type: 'child_start', ...place, attempt, childExecutionId: `child-1-a${attempt}` }
}

function end(attempt: number, disposition: 'completed' | 'failed' | 'cancelled', result: ChildEndLine['result']): Omit<ChildEndLine, 'v' | 'seq' | 'ts' | 'runId' | 'executionId'> {
  return {
    type: 'child_end',
    ...place,
    attempt,
    childExecutionId: `child-1-a${attempt}`,
    status: disposition === 'completed' ? 'completed' : 'failed',
    disposition,
    ...(result === undefined ? {} : { result }),
    durationMs: 5,
  }
}

describe('child workflow lines', () => {
  it('refuses a completed spawn attempt whose child did not complete', () => {
    expect(() => stamp([{ ...end(1, 'failed', null), status: 'completed' }])).toThrow(/disposition/)
  })

  it('folds a spawn retried after a partial child into counts and a README table that agree', () => {
    const lines = stamp([
      { type: 'run_start', workflow: 'parent', input: null, options: {} },
      start(1),
      end(1, 'failed', { ok: true, partial: true }),
      { type: 'retry', kind: 'child', message: '[workflow:retry] child-1', callId: 'child-1', fromAttempt: 1, toAttempt: 2, attempts: 2, cause: 'failed' },
      start(2),
      end(2, 'completed', { ok: true }),
      { type: 'run_end', disposition: 'completed', ok: true, result: { ok: true }, durationMs: 10 },
    ])
    const view = createRunView()
    for (const line of lines) view.apply(line)
    expect(view.counts).toMatchObject({ childCalls: 1, childAttempts: 2, childRetries: 1, childCompleted: 1, childFailed: 0 })
    const [child] = view.children()
    expect(child?.retries).toHaveLength(1)
    const readme = renderOutputsReadme(view)
    expect(readme).toContain('- Child workflows: 1 (2 attempts, 1 retry); 1 completed, 0 failed, 0 unfinished')
    expect(readme).toContain('| `child-1` | `enrich` | 1/2 | **failed** (partial result) | `child-1-a1` |')
    expect(readme).toContain('| `child-1` | `enrich` | 2/2 | completed | `child-1-a2` |')
  })

  it('shows a spawn in the live progress tree: running, then waiting to retry, then failed with the child disposition', () => {
    const lines = stamp([
      { type: 'run_start', workflow: 'parent', input: null, options: {} },
      start(1),
      end(1, 'cancelled', null),
      { type: 'retry', kind: 'child', message: '[workflow:retry] child-1', callId: 'child-1', fromAttempt: 1, toAttempt: 2, attempts: 2, cause: 'child-failed' },
      start(2),
      end(2, 'failed', { ok: false }),
    ])
    const statusAfter = (count: number) => {
      const view = createRunView({ keep: 'all' })
      for (const line of lines.slice(0, count)) view.apply(line)
      return progressTree(view).roots.map((node) => (node.kind === 'group' ? node.kind : [node.kind, node.name, node.status, node.attempt, node.detail]))
    }
    expect(statusAfter(2)).toEqual([['child', 'enrich', 'running', 1, undefined]])
    expect(statusAfter(4)).toEqual([['child', 'enrich', 'retrying', 1, 'child-failed']])
    expect(statusAfter(6)).toEqual([['child', 'enrich', 'failed', 2, 'failed']])
  })

  it("names a child run's parent execution and spawn in its own README", () => {
    const lines = stamp([{ type: 'run_start', workflow: 'leaf', input: null, options: {}, parentRunId: 'run-1', parentExecutionId: 'child-1-a1', parentCallId: 'child-2' }])
    expect(renderOutputsReadme(lines)).toContain('- Parent run: `run-1` (execution `child-1-a1`, spawn `child-2`)')
  })

  it('counts each spawn once by its last attempt, however its attempts end', () => {
    const outcome = fc.constantFrom('completed' as const, 'failed' as const, 'cancelled' as const, 'unfinished' as const)
    fc.assert(
      fc.property(fc.array(fc.array(outcome, { minLength: 1, maxLength: 3 }), { maxLength: 5 }), (spawns) => {
        const inputs: JournalLineInput[] = []
        spawns.forEach((attempts, index) => {
          attempts.forEach((ending, offset) => {
            const ids = { childCallId: `child-${index}`, workflow: 'w', maxAttempts: 3, ordinal: String(index), attempt: offset + 1, childExecutionId: `child-${index}-a${offset + 1}` }
            inputs.push({ type: 'child_start', ...ids })
            if (ending !== 'unfinished') inputs.push({ type: 'child_end', ...ids, status: ending === 'completed' ? 'completed' : 'failed', disposition: ending, durationMs: 1 })
          })
        })
        const view = createRunView()
        for (const line of stamp(inputs)) view.apply(line)
        const last = spawns.map((attempts) => attempts.at(-1))
        expect(view.counts.childCalls).toBe(spawns.length)
        expect(view.counts.childAttempts).toBe(spawns.flat().length)
        expect(view.counts.childCompleted).toBe(last.filter((ending) => ending === 'completed').length)
        expect(view.counts.childFailed).toBe(last.filter((ending) => ending === 'failed' || ending === 'cancelled').length)
      }),
    )
  })
})
