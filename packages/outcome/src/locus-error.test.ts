import { describe, expect, it } from 'vitest'
import type * as LocusErrorModule from './locus-error.js'
import { LocusError, UNKNOWN_ERROR_CODE, hasLocusErrorCode, toLocusError } from './locus-error.js'

describe('LocusError', () => {
  it('carries a stable code and keeps its cause', () => {
    const cause = new Error('root cause')
    const error = new LocusError('it broke', { code: 'SOME_CODE', cause })
    expect(error.code).toBe('SOME_CODE')
    expect(error.cause).toBe(cause)
    expect(error).toBeInstanceOf(Error)
  })

  it('isInstance recognises an error created by a second installed copy of the package', async () => {
    // A query string makes the module loader evaluate the file again: a distinct class object.
    const specifier = './locus-error.ts?second-copy'
    const copy = (await import(/* @vite-ignore */ specifier)) as typeof LocusErrorModule
    expect(copy.LocusError).not.toBe(LocusError)
    const foreign = new copy.LocusError('from the other copy', { code: 'X' })
    expect(foreign instanceof LocusError).toBe(false)
    expect(LocusError.isInstance(foreign)).toBe(true)
    expect(copy.LocusError.isInstance(new LocusError('ours', { code: 'Y' }))).toBe(true)
  })

  it('isInstance refuses look-alikes without the registered marker', () => {
    expect(LocusError.isInstance(Object.assign(new Error('x'), { code: 'X' }))).toBe(false)
    expect(LocusError.isInstance({ code: 'X', message: 'x' })).toBe(false)
    expect(LocusError.isInstance(null)).toBe(false)
    expect(LocusError.isInstance('LocusError')).toBe(false)
  })

  it('hasLocusErrorCode checks both identity and code', () => {
    const error = new LocusError('x', { code: 'A' })
    expect(hasLocusErrorCode(error, 'A')).toBe(true)
    expect(hasLocusErrorCode(error, 'B')).toBe(false)
    expect(hasLocusErrorCode({ code: 'A' }, 'A')).toBe(false)
  })
})

describe('toLocusError', () => {
  it('returns a Locus error unchanged', () => {
    const error = new LocusError('x', { code: 'A' })
    expect(toLocusError(error)).toBe(error)
  })

  it('wraps a plain Error, keeping its name, message and the original as cause', () => {
    const original = new TypeError('bad type')
    const wrapped = toLocusError(original)
    expect(wrapped).toMatchObject({ code: UNKNOWN_ERROR_CODE, name: 'TypeError', message: 'bad type' })
    expect(wrapped.cause).toBe(original)
  })

  it.each([
    ['a string', 'plain text', 'plain text'],
    ['undefined', undefined, 'undefined was thrown'],
    ['null', null, 'null was thrown'],
    ['an object', { reason: 'x' }, 'a non-error value was thrown: {"reason":"x"}'],
    ['a BigInt', 5n, 'a non-error value of type bigint was thrown'],
  ])('wraps %s with a readable message', (_label, thrown, message) => {
    const wrapped = toLocusError(thrown)
    expect(wrapped.message).toBe(message)
    expect(wrapped.cause).toBe(thrown)
    expect(wrapped.code).toBe(UNKNOWN_ERROR_CODE)
  })
})
