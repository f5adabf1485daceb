import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { applyJitter, backoffDelaySecs } from './backoff.js'
import { isRetryOptionsError } from './retry-options-error.js'
import type { RetryPolicy } from './retry-policy.js'

const policy = (backoff_base_secs: number, backoff_max_secs: number): RetryPolicy => ({
  timeout_secs: null,
  max_retries: 10,
  backoff_base_secs,
  backoff_max_secs,
})

describe('backoffDelaySecs: min(backoff_base_secs ** n, backoff_max_secs)', () => {
  it('base 2 gives 2, 4, 8 seconds for n = 1, 2, 3, capped at the ceiling', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelaySecs(n, policy(2, 60)))).toEqual([2, 4, 8, 16, 32, 60])
  })

  it('base 0 means no wait', () => {
    expect([1, 2, 3].map((n) => backoffDelaySecs(n, policy(0, 60)))).toEqual([0, 0, 0])
  })

  it('a ceiling of 0 means no wait whatever the base', () => {
    expect(backoffDelaySecs(4, policy(3, 0))).toBe(0)
  })

  it('saturates at the ceiling instead of overflowing for a huge n', () => {
    expect(backoffDelaySecs(100_000, policy(2, 60))).toBe(60)
  })

  it('never decreases with n and never exceeds the ceiling', () => {
    fc.assert(
      fc.property(fc.oneof(fc.constant(0), fc.double({ min: 1, max: 100, noNaN: true })), fc.double({ min: 0, max: 1e6, noNaN: true }), fc.integer({ min: 1, max: 200 }), (base, ceiling, n) => {
        const current = backoffDelaySecs(n, policy(base, ceiling))
        expect(current).toBeLessThanOrEqual(ceiling)
        expect(backoffDelaySecs(n + 1, policy(base, ceiling))).toBeGreaterThanOrEqual(current)
      }),
    )
  })

  it.each([0, -1, 1.5, Number.NaN])('refuses retry number %s with a RetryOptionsError naming n', (n) => {
    expect(() => backoffDelaySecs(n, policy(2, 60))).toThrow(expect.objectContaining({ field: 'n', code: 'RETRY_OPTIONS_INVALID' }))
  })
})

describe('applyJitter', () => {
  it('"none" returns the delay unchanged and never draws', () => {
    expect(applyJitter(4, 'none', () => Number.NaN)).toBe(4)
  })

  it('"full" draws from [0, delay] and "equal" from [delay / 2, delay], as AWS describes them', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1e9, noNaN: true }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (delay, draw) => {
        const full = applyJitter(delay, 'full', () => draw)
        const equal = applyJitter(delay, 'equal', () => draw)
        expect(full).toBeGreaterThanOrEqual(0)
        expect(full).toBeLessThanOrEqual(delay)
        expect(equal).toBeGreaterThanOrEqual(delay / 2)
        expect(equal).toBeLessThanOrEqual(delay)
      }),
      { numRuns: 1_000 },
    )
  })

  it('refuses a random source that leaves [0, 1) and an unknown mode', () => {
    for (const draw of [1, -0.1, Number.NaN]) {
      expect(() => applyJitter(4, 'full', () => draw)).toThrow(expect.objectContaining({ field: 'random' }))
    }
    let error: unknown
    try {
      applyJitter(4, 'half' as 'full')
    } catch (caught) {
      error = caught
    }
    expect(isRetryOptionsError(error)).toBe(true)
    expect(error).toMatchObject({ field: 'jitter' })
  })
})
