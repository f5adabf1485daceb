import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Answer } from './answer.js'
import { renderAnswer } from './render-answer.js'

const base: Answer = { text: 'Net 45.', caveats: [], gaps: [], ok: true, partial: false, found: true, gathered: [] }

describe('renderAnswer', () => {
  it('prints the caveats in their own section after the text', () => {
    expect(renderAnswer({ ...base, caveats: ['Could not check the payment history (timed out).'] })).toBe(
      'Net 45.\n\nCaveats:\n- Could not check the payment history (timed out).',
    )
  })

  it('prints only the text when there is nothing to caveat', () => {
    expect(renderAnswer(base)).toBe('Net 45.')
  })

  it('lists what was gathered when the run could not answer', () => {
    const rendered = renderAnswer({
      ...base,
      text: 'I could not answer this.',
      ok: false,
      found: false,
      gathered: [{ step: 1, tool: 'get_contract', description: 'the contract terms', state: 'found', data: {}, summary: 'checked the contract terms' }],
    })
    expect(rendered).toContain('Gathered before stopping:\n- checked the contract terms')
  })

  it('every caveat reaches the reader whatever happens to text (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ minLength: 1 }).map((text) => `Could not check ${text}.`), { minLength: 1, maxLength: 5 }),
        fc.string(),
        fc.func(fc.string()),
        (caveats, text, rewrite) => {
          const answer: Answer = { ...base, text: rewrite(text), caveats }
          const rendered = renderAnswer(answer)
          const caveatSection = rendered.slice(rendered.lastIndexOf('Caveats:'))
          for (const caveat of caveats) expect(caveatSection).toContain(`- ${caveat}`)
        },
      ),
    )
  })
})
