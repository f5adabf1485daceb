// The runnable examples of docs/groups.md and the README, checked so they keep working.
import { classifyOutcome, prepareWorkflowResult } from '@locus/outcome'
import { describe, expect, it } from 'vitest'
import { main as barrier } from '../examples/barrier-and-slots.js'
import { main as catchAndContinue } from '../examples/catch-and-continue.js'
import { main as deterministicIds } from '../examples/deterministic-ids.js'
import { main as hardStop } from '../examples/hard-stop-and-cancel.js'
import { main as pipelineStages } from '../examples/pipeline-stages.js'

describe('examples', () => {
  it('barrier-and-slots: the slow branch completes, every failure kind shows up', async () => {
    const error = await barrier()
    expect(error.slots.map((slot) => slot.status)).toEqual(['completed', 'failed', 'failed', 'failed', 'completed'])
    expect(error.failures.map((failure) => failure.kind)).toEqual(['thrown', 'returned', 'boundary'])
    expect(error.partialResults).toEqual([{ ok: true, invoices: 12 }, null, { status: 'blocked', summary: 'Owner decision required' }, null, null])
  })

  it('pipeline-stages: the blocked item stops at stage 1, others run every stage', async () => {
    const { stagesRun, error } = await pipelineStages()
    expect(stagesRun).not.toContain('summarise T-2')
    expect(stagesRun).toEqual(expect.arrayContaining(['summarise T-1', 'summarise T-3']))
    expect(error.stageIndex).toBe(1)
  })

  it('hard-stop-and-cancel: the cap error arrives unwrapped; the cancellation lists what never started', async () => {
    const report = await hardStop()
    expect(report.sameObject).toBe(true)
    expect(report.started).toEqual([])
    expect(report.cancelled.notDispatched).toEqual([1, 2])
    const ends = report.events.filter((event) => event.type === 'group_end')
    expect(ends.map((event) => event.outcome)).toEqual(['hard-stopped', 'hard-stopped', 'cancelled'])
  })

  it('deterministic-ids: opposite latencies, same ids', async () => {
    const { fastFirst, slowFirst } = await deterministicIds()
    expect(fastFirst).toEqual(slowFirst)
    expect(fastFirst).toContain('nested call 2[0].1[0].1')
  })

  it('catch-and-continue: returns a JSON-safe partial result the classifier fails', async () => {
    const result = await catchAndContinue()
    expect(result).toMatchObject({ ok: false, partial: true, completed: 1, failed: 1, results: [{ source: 'wiki', text: 'Net 45' }, null] })
    expect(classifyOutcome(prepareWorkflowResult(result)).failed).toBe(true)
  })
})

describe('README snippet', () => {
  it('prints what the README says it prints', async () => {
    const { output } = await import('../examples/readme.js')
    expect(output).toEqual({ a: 'alpha', b: null, lengths: [1, 2], completed: 1, failed: 1, status: 'blocked' })
  })
})
