import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type * as PolicyErrorModule from './retry-policy-error.js'
import { RetryPolicyError, isRetryPolicyError } from './retry-policy-error.js'
import { DEFAULT_RETRY_POLICY, RetryPolicySchema, isRetryPolicy, parseRetryPolicy } from './retry-policy.js'

const valid = { timeout_secs: 30, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 60 }

function refusal(input: unknown): RetryPolicyError {
  try {
    parseRetryPolicy(input)
  } catch (error) {
    if (isRetryPolicyError(error)) return error
    throw new Error(`expected a RetryPolicyError, got ${String(error)}`)
  }
  throw new Error('expected parseRetryPolicy to throw')
}

describe('parseRetryPolicy: the seed policy', () => {
  it('accepts the seed example and returns a fresh copy', () => {
    const parsed = parseRetryPolicy(valid)
    expect(parsed).toEqual(valid)
    expect(parsed).not.toBe(valid)
  })

  it('accepts timeout_secs: null (waits forever) and backoff_base_secs: 0 (no wait)', () => {
    expect(parseRetryPolicy({ ...valid, timeout_secs: null, backoff_base_secs: 0 })).toMatchObject({ timeout_secs: null, backoff_base_secs: 0 })
  })

  it('accepts a policy read from JSON text', () => {
    expect(parseRetryPolicy(JSON.parse('{"timeout_secs":0.5,"max_retries":1,"backoff_base_secs":1.5,"backoff_max_secs":0}'))).toEqual({
      timeout_secs: 0.5,
      max_retries: 1,
      backoff_base_secs: 1.5,
      backoff_max_secs: 0,
    })
  })

  it('the default is no retry and no timeout, is itself valid, and is frozen', () => {
    expect(DEFAULT_RETRY_POLICY.max_retries).toBe(1)
    expect(DEFAULT_RETRY_POLICY.timeout_secs).toBeNull()
    expect(parseRetryPolicy(DEFAULT_RETRY_POLICY)).toEqual(DEFAULT_RETRY_POLICY)
    expect(Object.isFrozen(DEFAULT_RETRY_POLICY)).toBe(true)
  })
})

describe('parseRetryPolicy: bad input names the field and the rule', () => {
  it.each([
    ['max_retries', { ...valid, max_retries: 0 }, 'max_retries must be an integer >= 1, got 0'],
    ['max_retries', { ...valid, max_retries: -2 }, 'max_retries must be an integer >= 1, got -2'],
    ['max_retries', { ...valid, max_retries: 2.5 }, 'max_retries must be an integer >= 1, got 2.5'],
    ['max_retries', { ...valid, max_retries: Number.NaN }, 'max_retries must be an integer >= 1, got NaN'],
    ['max_retries', { ...valid, max_retries: '3' }, 'max_retries must be an integer >= 1, got "3"'],
    ['max_retries', { ...valid, max_retries: 2 ** 60 }, 'max_retries must be at most 9007199254740991, got 1152921504606847000'],
    ['timeout_secs', { ...valid, timeout_secs: 0 }, 'timeout_secs must be a positive number of seconds, or null to wait forever, got 0'],
    ['timeout_secs', { ...valid, timeout_secs: -1 }, 'got -1'],
    ['timeout_secs', { ...valid, timeout_secs: Number.POSITIVE_INFINITY }, 'got Infinity'],
    ['timeout_secs', { ...valid, timeout_secs: '30s' }, 'got "30s"'],
    ['backoff_base_secs', { ...valid, backoff_base_secs: 0.5 }, 'backoff_base_secs must be 0 (no wait) or a number >= 1'],
    ['backoff_base_secs', { ...valid, backoff_base_secs: -2 }, 'got -2'],
    ['backoff_max_secs', { ...valid, backoff_max_secs: -1 }, 'backoff_max_secs must be a number of seconds >= 0, got -1'],
    ['backoff_max_secs', { ...valid, backoff_max_secs: null }, 'got null'],
  ])('refuses a bad %s: %j', (field, input, message) => {
    const error = refusal(input)
    expect(error.field).toBe(field)
    expect(error.code).toBe('RETRY_POLICY_INVALID')
    expect(error.message).toContain(message)
  })

  it('refuses missing fields rather than filling them, naming each', () => {
    const error = refusal({ max_retries: 3 })
    expect(error.field).toBe('timeout_secs')
    expect(error.issues.map((issue) => issue.field)).toEqual(['timeout_secs', 'backoff_base_secs', 'backoff_max_secs'])
    expect(error.message).toContain('timeout_secs is missing')
  })

  it('refuses an unknown field, so a typo is not silently ignored', () => {
    const { max_retries: _dropped, ...rest } = valid
    const error = refusal({ ...rest, max_retry: 3 })
    expect(error.issues.map((issue) => issue.field).sort()).toEqual(['max_retries', 'max_retry'].sort())
    expect(error.message).toContain('unknown field max_retry')
  })

  it.each([
    ['a string', 'retry 3 times', '"retry 3 times"'],
    ['null', null, 'null'],
    ['an array', [30, 3, 2, 60], 'an array'],
    ['a number', 3, '3'],
  ])('refuses %s in place of a policy, naming the policy itself', (_label, input, shown) => {
    const error = refusal(input)
    expect(error.field).toBe('policy')
    expect(error.message).toContain(`got ${shown}`)
  })

  it('keeps the zod error as cause and is recognised across installed copies', async () => {
    const error = refusal({ ...valid, max_retries: 0 })
    expect(error.cause).toBeDefined()
    const specifier = './retry-policy-error.ts?second-copy'
    const copy = (await import(/* @vite-ignore */ specifier)) as typeof PolicyErrorModule
    expect(copy.RetryPolicyError).not.toBe(RetryPolicyError)
    expect(copy.RetryPolicyError.isInstance(error)).toBe(true)
  })

  it('never throws anything but a RetryPolicyError, whatever the input', () => {
    fc.assert(
      fc.property(fc.anything({ withNullPrototype: true, withBoxedValues: true }), (input) => {
        try {
          parseRetryPolicy(input)
        } catch (error) {
          expect(isRetryPolicyError(error)).toBe(true)
        }
      }),
    )
  })
})

describe('isRetryPolicy: the fast check agrees with the schema', () => {
  const numberish = fc.oneof(
    fc.double(),
    fc.integer({ min: -3, max: 10 }),
    fc.constantFrom(0, 0.5, 1, 2, Number.NaN, Number.POSITIVE_INFINITY, -0, 2 ** 53, 2 ** 53 - 1),
    fc.constantFrom(null, undefined, '3', true),
  )
  const policyish = fc.record(
    { timeout_secs: numberish, max_retries: numberish, backoff_base_secs: numberish, backoff_max_secs: numberish, extra: numberish },
    { requiredKeys: ['timeout_secs', 'max_retries', 'backoff_base_secs', 'backoff_max_secs'] },
  )

  it('accepts exactly what RetryPolicySchema accepts', () => {
    fc.assert(
      fc.property(fc.oneof(policyish, fc.anything()), (input) => {
        expect(isRetryPolicy(input)).toBe(RetryPolicySchema.safeParse(input).success)
      }),
      { numRuns: 2_000 },
    )
  })

  it('counts only own fields, so a polluted prototype does not break it', () => {
    const inherited = Object.assign(Object.create({ inherited: 1 }) as object, valid)
    expect(isRetryPolicy(inherited)).toBe(true)
  })
})
