import { classifyOutcome, prepareWorkflowResult } from '@locus/outcome'
import { describe, expect, it } from 'vitest'
import { echoGenerate, runMissingRequired, runWithGaps } from '../test/fixtures.js'
import { deriveAnswerOutcome } from './answer-outcome.js'
import { answerPartial } from './answer-partial.js'
import { assessPartial } from './assess-partial.js'

describe('deriveAnswerOutcome', () => {
  it('reads complete / partial / cannot_answer from an assessment', () => {
    const partial = runWithGaps()
    const missing = runMissingRequired()
    expect(deriveAnswerOutcome(assessPartial(partial.plan, partial.results))).toBe('partial')
    expect(deriveAnswerOutcome(assessPartial(missing.plan, missing.results))).toBe('cannot_answer')
    expect(deriveAnswerOutcome(assessPartial({ steps: [] }, new Map()))).toBe('complete')
  })

  it('reads the outcome from an answer, and failed when the run produced none', async () => {
    const partial = runWithGaps()
    const missing = runMissingRequired()
    expect(deriveAnswerOutcome(await answerPartial(partial, assessPartial(partial.plan, partial.results), echoGenerate))).toBe('partial')
    expect(deriveAnswerOutcome(await answerPartial(missing, assessPartial(missing.plan, missing.results), echoGenerate))).toBe('cannot_answer')
    expect(deriveAnswerOutcome(undefined)).toBe('failed')
    expect(deriveAnswerOutcome(null)).toBe('failed')
  })

  it('keeps the two axes apart: a partial answer returned as the root result is a failed disposition and a partial outcome', async () => {
    const run = runWithGaps()
    const answer = await answerPartial(run, assessPartial(run.plan, run.results), echoGenerate)
    // The disposition axis (seed 000): partial: true is non-success for the runner.
    expect(classifyOutcome(prepareWorkflowResult(answer))).toMatchObject({ failed: true, reasons: ['partial'] })
    // The answer axis (seed 003): it is not an error; it is counted in its own row.
    expect(deriveAnswerOutcome(answer)).toBe('partial')
  })

  it('fails closed when it cannot answer: a cannot_answer answer is a failed disposition and a cannot_answer outcome', async () => {
    const run = runMissingRequired()
    const answer = await answerPartial(run, assessPartial(run.plan, run.results), echoGenerate)
    expect(classifyOutcome(prepareWorkflowResult(answer))).toMatchObject({ failed: true, reasons: ['ok-false'] })
    expect(deriveAnswerOutcome(answer)).toBe('cannot_answer')
  })

  it('lets a complete answer through as a success', async () => {
    const run = { ...runWithGaps(), results: new Map() }
    const complete = await answerPartial({ ...run, plan: { steps: [] } }, assessPartial({ steps: [] }, new Map()), echoGenerate)
    expect(complete.ok).toBe(true)
    expect(classifyOutcome(prepareWorkflowResult(complete)).failed).toBe(false)
  })
})
