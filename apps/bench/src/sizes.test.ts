import { describe, expect, it } from 'vitest'
import { CompareSettingError, DEFAULT_RESUME_CALLS, REQUESTED_SIZES, fullSizes, smokeSizes } from './sizes.js'

describe('sizes', () => {
  it('the smoke run is 1% of every requested size', () => {
    expect(smokeSizes()).toEqual({ fanOutTasks: 100, journaledCalls: 100, pipelineItems: 10, resumeCalls: 1000 })
  })

  it('a full run uses the requested sizes, resume reduced unless LOCUS_BENCH_RESUME_CALLS says otherwise', () => {
    expect(fullSizes({})).toEqual({ ...REQUESTED_SIZES, resumeCalls: DEFAULT_RESUME_CALLS })
    expect(fullSizes({ LOCUS_BENCH_RESUME_CALLS: '100000' }).resumeCalls).toBe(100_000)
  })

  it('refuses a resume size that is not a whole number of calls, naming the variable', () => {
    for (const bad of ['0', '-5', '1.5', 'lots']) {
      let caught: unknown
      try {
        fullSizes({ LOCUS_BENCH_RESUME_CALLS: bad })
      } catch (error) {
        caught = error
      }
      expect(caught).toBeInstanceOf(CompareSettingError)
      expect((caught as CompareSettingError).setting).toBe('LOCUS_BENCH_RESUME_CALLS')
      expect((caught as Error).message).toContain(`"${bad}"`)
    }
  })
})
