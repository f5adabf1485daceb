import fc from 'fast-check'
import { prepareWorkflowResult } from '@locus/outcome'
import { describe, expect, it } from 'vitest'
import { answerOutcomeOf, caveatsOf, findAnswer, gapsOf, judgeRunAnswer } from './run-answer.js'

const answer = {
  text: 'Two invoices are overdue.',
  caveats: ['Could not check the payment history.'],
  gaps: [{ step: 2, tool: 'get_payments', criticality: 'enriching', reason: 'timeout' }],
  partial: true,
  ok: false,
  found: true,
  gathered: [],
}

describe('judgeRunAnswer', () => {
  it('finds an Answer at the root or under `answer`, and reads its gaps and caveats', () => {
    for (const result of [answer, { ok: false, partial: true, answer }]) {
      expect(findAnswer(result)).toEqual(answer)
      expect(judgeRunAnswer('failed', result)).toEqual({
        answerOutcome: 'partial',
        gaps: [{ tool: 'get_payments', criticality: 'enriching', reason: 'timeout' }],
        caveats: ['Could not check the payment history.'],
      })
    }
  })

  it('a value that is not an Answer has no gaps and no caveats, whatever fields it has', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const detached = prepareWorkflowResult(value)
        if (findAnswer(detached) !== undefined) return
        expect(gapsOf(detached)).toEqual([])
        expect(caveatsOf(detached)).toEqual([])
      }),
    )
  })

  it('a cancelled run is failed whatever it returned; a completed run without an Answer is complete', () => {
    expect(answerOutcomeOf('cancelled', answer)).toBe('failed')
    expect(answerOutcomeOf('completed', { ok: true })).toBe('complete')
    expect(answerOutcomeOf('failed', { ok: false, found: false })).toBe('cannot_answer')
    expect(answerOutcomeOf('failed', null)).toBe('failed')
  })

})
