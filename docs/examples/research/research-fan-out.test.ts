import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { answerOutcomeOf } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { runExample } from '../run-example.js'
import researchFanOut from './research-fan-out.js'

const fixtures = join(import.meta.dirname, 'research-fan-out.fixtures.json')

describe('research fan-out example', () => {
  it('ends failed with a partial answer whose caveat names the missing payment history', async () => {
    const run = await runExample(researchFanOut as never, fixtures)
    expect(run.disposition).toBe('failed')
    expect(answerOutcomeOf(run.disposition, run.result)).toBe('partial')
    expect(run.result).toMatchObject({
      partial: true,
      found: true,
      caveats: ['Could not check the payment history (finance system did not respond in time).'],
      gaps: [{ tool: 'payment_history', criticality: 'enriching' }],
    })
    // The empty ticket list is a fact the answer states, never a gap.
    const gathered = (run.result as { gathered: { tool: string; summary: string }[] }).gathered
    expect(gathered.map((item) => item.summary)).toEqual(['checked the contract terms', 'checked open support tickets: none found'])
    expect(readFileSync(join(run.runDir, 'outputs', 'README.md'), 'utf8')).toContain('failed')
  })

  it('refuses input whose customer is empty, naming the field', async () => {
    await expect(runExample(researchFanOut as never, fixtures, { customer: '', question: 'q' })).rejects.toThrow(/customer/)
  })
})
