import { describe, expect, it } from 'vitest'
import { echoGenerate, runMissingRequired, runWithGaps } from '../test/fixtures.js'
import type { Answer } from './answer.js'
import { answerPartial } from './answer-partial.js'
import { deriveAnswerOutcome } from './answer-outcome.js'
import { assessPartial } from './assess-partial.js'
import { PartialInputError } from './partial-error.js'
import { renderAnswer } from './render-answer.js'
import { type DegradedEvent, withFallback } from './with-fallback.js'

const CAVEAT = 'Live systems were unavailable, so this is from the documents and may be out of date.'
const documentsAnswer: Answer = {
  text: 'Per the master agreement, Henderson is on Net 45.',
  caveats: [],
  gaps: [],
  ok: true,
  partial: false,
  found: true,
  gathered: [],
}

function primaryFor(run = runMissingRequired()) {
  return () => answerPartial(run, assessPartial(run.plan, run.results), echoGenerate)
}

describe('withFallback', () => {
  it('answers from the fallback with the mandatory caveat naming it, when the primary cannot answer', async () => {
    const events: DegradedEvent[] = []
    const answer = await withFallback(primaryFor(), () => documentsAnswer, {
      caveat: CAVEAT,
      from: 'live',
      to: 'documents',
      onDegraded: (event) => {
        events.push(event)
      },
    })
    expect(answer.text).toBe(documentsAnswer.text)
    expect(answer.caveats).toEqual([CAVEAT])
    expect(renderAnswer(answer)).toContain(CAVEAT)
    expect(answer.degraded).toEqual({ from: 'live', to: 'documents', reason: ['get_invoices'] })
    expect(answer.partial).toBe(true)
    expect(deriveAnswerOutcome(answer)).toBe('partial')
    // The missing required tool stays a gap, so the metrics see which dependency forced the detour.
    expect(answer.gaps.map((gap) => gap.tool)).toContain('get_invoices')
    expect(answer.gathered.map((result) => result.tool)).toContain('get_contract')
  })

  it('journals the degradation with its reason before the fallback runs', async () => {
    const order: string[] = []
    await withFallback(
      primaryFor(),
      () => {
        order.push('fallback')
        return documentsAnswer
      },
      {
        caveat: CAVEAT,
        onDegraded: (event) => {
          order.push(`degraded:${event.from}->${event.to}:${event.reason.join(',')}`)
        },
      },
    )
    expect(order).toEqual(['degraded:primary->fallback:get_invoices', 'fallback'])
  })

  it('returns an answer the primary could give unchanged, and never runs the fallback', async () => {
    let fallbackRan = false
    let degraded = false
    const answer = await withFallback(
      primaryFor(runWithGaps()),
      () => {
        fallbackRan = true
        return documentsAnswer
      },
      { caveat: CAVEAT, onDegraded: () => { degraded = true } },
    )
    expect(answer.found).toBe(true)
    expect(answer.caveats).not.toContain(CAVEAT)
    expect(fallbackRan).toBe(false)
    expect(degraded).toBe(false)
  })

  it('refuses to run without a caveat: a silent substitution is the failure it exists to prevent', async () => {
    await expect(withFallback(primaryFor(), () => documentsAnswer, { caveat: '   ', onDegraded: () => undefined })).rejects.toThrow(PartialInputError)
    await expect(withFallback(primaryFor(), () => documentsAnswer, { caveat: '', onDegraded: () => undefined })).rejects.toThrow(/options\.caveat/)
  })

  it('refuses to run without somewhere to report the degradation', async () => {
    const options = { caveat: CAVEAT } as unknown as Parameters<typeof withFallback>[2]
    await expect(withFallback(primaryFor(), () => documentsAnswer, options)).rejects.toThrow(/options\.onDegraded/)
  })
})
