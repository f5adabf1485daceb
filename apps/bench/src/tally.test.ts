import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { sortFailures, tallyDifferences } from './tally.js'
import { expectedPipeline } from './workloads/pipeline.js'
import { expectedFanOut } from './workloads/fan-out.js'

const base = { succeeded: 3, failed: 1, retries: 2, checksum: 10, failures: [{ index: 1, stage: 1 }] }

describe('tallyDifferences', () => {
  it('reports nothing for equal tallies, whatever order failures settled in', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.nat({ max: 1000 }), { maxLength: 30 }), (indices) => {
        const failures = indices.map((index) => ({ index, stage: index % 3 }))
        const tally = { ...base, failed: failures.length, failures: sortFailures(failures) }
        const shuffled = { ...tally, failures: sortFailures([...failures].reverse()) }
        expect(tallyDifferences(tally, shuffled)).toEqual([])
      }),
    )
  })

  it('names each count that differs', () => {
    expect(tallyDifferences(base, { ...base, retries: 3, checksum: 11 })).toEqual(['retries: expected 2, got 3', 'checksum: expected 10, got 11'])
  })

  it('catches an item reported at the wrong stage even when the counts agree', () => {
    const differences = tallyDifferences(base, { ...base, failures: [{ index: 1, stage: 2 }] })
    expect(differences).toEqual(['failures by item@stage: expected [#1@1], got [#1@2]'])
  })
})

describe('expected tallies', () => {
  it('fan-out: every task succeeds and one in failEvery costs one retry', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2000 }), fc.integer({ min: 1, max: 200 }), (tasks, failEvery) => {
        const expected = expectedFanOut(tasks, failEvery)
        expect(expected.succeeded).toBe(tasks)
        expect(expected.retries).toBe(Math.ceil(tasks / failEvery))
      }),
    )
  })

  it('pipeline: successes plus failures are the items, and every failure is at stage 1', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2000 }), fc.integer({ min: 1, max: 200 }), (items, failEvery) => {
        const expected = expectedPipeline(items, failEvery)
        expect(expected.succeeded + expected.failed).toBe(items)
        expect(expected.failures.every((failure) => failure.stage === 1 && failure.index % failEvery === 0)).toBe(true)
      }),
    )
  })
})
