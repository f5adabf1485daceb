import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseRetryAfterMs } from './retry-after.js'

describe('parseRetryAfterMs', () => {
  it('reads whole seconds from Retry-After, any header case', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 86_400 }), (seconds) => parseRetryAfterMs({ 'Retry-After': String(seconds) }) === seconds * 1000))
  })

  it('prefers retry-after-ms, which is in milliseconds', () => {
    expect(parseRetryAfterMs({ 'retry-after-ms': '1500.5', 'retry-after': '9' })).toBe(1500.5)
  })

  it('reads an HTTP date relative to the wall clock, never negative', () => {
    const now = Date.parse('2026-01-01T00:00:00Z')
    expect(parseRetryAfterMs({ 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' }, now)).toBe(30_000)
    expect(parseRetryAfterMs({ 'retry-after': 'Wed, 31 Dec 2025 23:59:00 GMT' }, now)).toBe(0)
  })

  it('ignores absent, garbage, negative and absurdly long values', () => {
    expect(parseRetryAfterMs(undefined)).toBeUndefined()
    expect(parseRetryAfterMs({})).toBeUndefined()
    expect(parseRetryAfterMs({ 'retry-after': 'soon' })).toBeUndefined()
    expect(parseRetryAfterMs({ 'retry-after': '-5' })).toBeUndefined()
    expect(parseRetryAfterMs({ 'retry-after': '999999999' })).toBeUndefined()
    expect(parseRetryAfterMs({ 'retry-after-ms': 'NaN', 'retry-after': '2' })).toBe(2000)
  })
})
