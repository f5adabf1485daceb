import { ERROR_CODES, LocusError, hasLocusErrorCode } from '@locus/outcome'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { CallError, isCallError } from './call-error.js'
import { toCallFailure } from './call-failure.js'

describe('toCallFailure: the seed failure shape (error, retryable, code)', () => {
  it('reads retryable and code from any Error carrying them', () => {
    const thrown = Object.assign(new Error('upstream 503'), { retryable: true, code: 'provider_error' })
    expect(toCallFailure(thrown)).toEqual({ error: 'upstream 503', retryable: true, code: 'provider_error', cause: thrown })
  })

  it('reads a CallError, taking the seed code from errorCode', () => {
    const thrown = new CallError('slow down', { retryable: true, code: 'rate_limited' })
    expect(toCallFailure(thrown)).toMatchObject({ error: 'slow down', retryable: true, code: 'rate_limited' })
  })

  it('reads the seed tool.error shape thrown as a plain object', () => {
    expect(toCallFailure({ error: 'upstream 503', retryable: true, code: 'provider_error' })).toMatchObject({
      error: 'upstream 503',
      retryable: true,
      code: 'provider_error',
    })
  })

  it('only retryable === true retries: truthy look-alikes are terminal', () => {
    for (const retryable of ['true', 1, {}, undefined, false]) {
      expect(toCallFailure(Object.assign(new Error('x'), { retryable })).retryable).toBe(false)
    }
  })

  it('keeps code only when it is one of the seed ErrorCodes', () => {
    expect(toCallFailure(Object.assign(new Error('reset'), { code: 'ECONNRESET', retryable: true }))).not.toHaveProperty('code')
    for (const code of ERROR_CODES) expect(toCallFailure(Object.assign(new Error('x'), { code })).code).toBe(code)
  })

  it('describes strings, null and other values, and keeps them as cause', () => {
    expect(toCallFailure('plain text')).toEqual({ error: 'plain text', retryable: false, cause: 'plain text' })
    expect(toCallFailure(null)).toMatchObject({ error: 'null was thrown', retryable: false })
    expect(toCallFailure(42).error).toContain('42')
  })

  it('survives a throwing getter and a hostile proxy, treating them as terminal', () => {
    const getter = Object.defineProperty(new Error('x'), 'retryable', {
      get() {
        throw new Error('no')
      },
    })
    expect(toCallFailure(getter)).toMatchObject({ error: 'x', retryable: false })
    const proxy = new Proxy(
      {},
      {
        get() {
          throw new Error('trap')
        },
        getPrototypeOf() {
          throw new Error('trap')
        },
      },
    )
    expect(toCallFailure(proxy)).toMatchObject({ retryable: false })
  })

  it('never throws, and is retryable only when the value says retryable: true', () => {
    fc.assert(
      fc.property(fc.anything({ withBoxedValues: true, withNullPrototype: true }), fc.boolean(), (value, wrap) => {
        const thrown = wrap && typeof value === 'object' && value !== null ? Object.assign(new Error('e'), value) : value
        const failure = toCallFailure(thrown)
        expect(typeof failure.error).toBe('string')
        const flag = typeof thrown === 'object' && thrown !== null ? (thrown as { retryable?: unknown }).retryable : undefined
        expect(failure.retryable).toBe(flag === true)
      }),
    )
  })
})

describe('CallError', () => {
  it('is a Locus error with the stable code CALL_FAILED, carrying retryable and the seed code as errorCode', () => {
    const cause = new Error('socket hang up')
    const error = new CallError('upstream 503', { retryable: true, code: 'provider_error', cause })
    expect(LocusError.isInstance(error)).toBe(true)
    expect(hasLocusErrorCode(error, 'CALL_FAILED')).toBe(true)
    expect(isCallError(error)).toBe(true)
    expect(CallError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ name: 'CallError', retryable: true, errorCode: 'provider_error', cause })
    expect(isCallError(new LocusError('x', { code: 'OTHER' }))).toBe(false)
  })

  it('refuses a non-boolean retryable and an unknown code with a RetryOptionsError', () => {
    expect(() => new CallError('x', { retryable: 'yes' as unknown as boolean })).toThrow(expect.objectContaining({ field: 'retryable' }))
    expect(() => new CallError('x', { retryable: true, code: 'timeout' as 'refused' })).toThrow(expect.objectContaining({ field: 'code' }))
  })
})
