import { FAILURE_CAUSES, type FailureCause } from '@locus/outcome'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { isRetryPolicyError } from './retry-policy-error.js'
import { isRetryPolicy } from './retry-policy.js'
import { TRANSPORT_RETRYABLE_CAUSES, isTransportRetryable, parseAttempts, transportRetryPolicy } from './transport-retry.js'

describe('transport retry: an allowlist of two causes', () => {
  it('retries host-turn-timeout and call-timeout only', () => {
    expect(TRANSPORT_RETRYABLE_CAUSES).toEqual(['host-turn-timeout', 'call-timeout'])
    expect(FAILURE_CAUSES.filter((cause) => isTransportRetryable(cause))).toEqual(['host-turn-timeout', 'call-timeout'])
  })

  it.each(FAILURE_CAUSES.filter((cause) => cause !== 'host-turn-timeout' && cause !== 'call-timeout'))('does not retry %s', (cause) => {
    expect(isTransportRetryable(cause)).toBe(false)
  })

  it('does not retry unclassified, unknown causes, or values that are not causes', () => {
    expect(isTransportRetryable('unclassified')).toBe(false)
    for (const cause of ['timeout', 'CALL-TIMEOUT', '', null, undefined, 1]) expect(isTransportRetryable(cause as FailureCause)).toBe(false)
  })
})

describe('parseAttempts: an integer >= 1, no upper bound, undeclared means 1', () => {
  it('reads undefined as a single attempt', () => {
    expect(parseAttempts(undefined)).toBe(1)
  })

  it('honours any integer >= 1 exactly, with no package upper bound', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (attempts) => {
        expect(parseAttempts(attempts)).toBe(attempts)
      }),
    )
  })

  it.each([0, -1, 2.5, Number.NaN, Number.POSITIVE_INFINITY, null, '2', true, [2], 2 ** 60])('refuses %s with a typed error naming attempts', (value) => {
    let error: unknown
    try {
      parseAttempts(value)
    } catch (caught) {
      error = caught
    }
    expect(isRetryPolicyError(error)).toBe(true)
    expect(error).toMatchObject({ field: 'attempts', message: expect.stringContaining('attempts must be') })
  })

  it('names the rule and the value received', () => {
    expect(() => parseAttempts(0)).toThrow('attempts must be an integer >= 1, got 0')
  })

  it('transportRetryPolicy re-sends at once, with no timeout of its own', () => {
    const policy = transportRetryPolicy(2)
    expect(policy).toEqual({ timeout_secs: null, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 })
    expect(isRetryPolicy(policy)).toBe(true)
    expect(transportRetryPolicy(undefined).max_retries).toBe(1)
  })
})
