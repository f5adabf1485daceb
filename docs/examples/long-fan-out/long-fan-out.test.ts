import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runExample } from '../run-example.js'
import longFanOut, { REGIONS } from './long-fan-out.js'

describe('long fan-out example', () => {
  it('completes with one summary per region, in input order', async () => {
    const run = await runExample(longFanOut as never, join(import.meta.dirname, 'long-fan-out.fixtures.json'))
    expect(run.disposition).toBe('completed')
    const result = run.result as { regions: number; summaries: { region: string }[] }
    expect(result.regions).toBe(REGIONS.length)
    expect(result.summaries.map((summary) => summary.region)).toEqual([...REGIONS])
  })
})
