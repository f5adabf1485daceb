import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createRunView, readJournal } from '@locus/journal'
import { RunResultSchema, defineWorkflow, runWorkflowScript } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { linesOfType, tempRunsDir } from './helpers.js'

const partialAnswer = {
  text: 'Two invoices are overdue.',
  caveats: ['Could not check the payment history.'],
  gaps: [{ step: 2, tool: 'get_payments', criticality: 'enriching', reason: 'timeout' }],
  partial: true,
  ok: false,
  found: true,
  gathered: [],
}

describe('the answer outcome, gaps and caveats are judged once, at the end', () => {
  it('writes them on run_end and in result.json, which passes RunResultSchema', async () => {
    const runsDir = tempRunsDir()
    const run = await runWorkflowScript(defineWorkflow({ name: 'answers', run: () => ({ ok: false, partial: true, answer: partialAnswer }) }), { runsDir })
    expect(run.disposition).toBe('failed')
    const [end] = linesOfType(readJournal(join(run.executionDir, 'journal.jsonl')).lines, 'run_end')
    expect(end).toMatchObject({
      answerOutcome: 'partial',
      gaps: [{ tool: 'get_payments', criticality: 'enriching', reason: 'timeout' }],
      caveats: ['Could not check the payment history.'],
    })
    const file = RunResultSchema.parse(JSON.parse(readFileSync(join(run.executionDir, 'result.json'), 'utf8')))
    expect(file).toMatchObject({ disposition: 'failed', ok: false, answerOutcome: 'partial', caveats: ['Could not check the payment history.'] })
  })

  it('a reader folding the journal reads the same judgement without recomputing it', async () => {
    const runsDir = tempRunsDir()
    const run = await runWorkflowScript(defineWorkflow({ name: 'plain', run: () => ({ ok: true, value: 1 }) }), { runsDir })
    const view = createRunView()
    for (const line of readJournal(join(run.executionDir, 'journal.jsonl')).lines) view.apply(line)
    expect(view.answerOutcome).toBe('complete')
    expect(view.gaps).toEqual([])
    expect(view.caveats).toEqual([])
  })
})
