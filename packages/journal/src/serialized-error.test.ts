import fc from 'fast-check'
import { LocusError, WorkflowResultPreparationError, hasLocusErrorCode, isWorkflowResultPreparationError } from '@locus/outcome'
import { describe, expect, it } from 'vitest'
import type * as SerializedErrorModule from './serialized-error.js'
import { SerializedErrorSchema, deserializeError, registerErrorFactory, serializeError } from './serialized-error.js'

class QuotaError extends LocusError {
  readonly limit: number
  constructor(limit: number, cause?: unknown) {
    super(`quota of ${limit} reached`, { code: 'QUOTA_REACHED', cause })
    this.name = 'QuotaError'
    this.limit = limit
  }
}

describe('serializeError', () => {
  it('keeps name, code, message, JSON-safe own fields and the cause chain', () => {
    const root = Object.assign(new Error('disk full'), { code: 'ENOSPC' })
    const serialized = serializeError(new QuotaError(3, root))
    expect(serialized).toMatchObject({
      name: 'QuotaError',
      code: 'QUOTA_REACHED',
      message: 'quota of 3 reached',
      data: { limit: 3 },
      cause: { name: 'Error', code: 'ENOSPC', message: 'disk full' },
    })
    expect(SerializedErrorSchema.parse(JSON.parse(JSON.stringify(serialized)))).toStrictEqual(JSON.parse(JSON.stringify(serialized)))
  })

  it('gives errors without a code UNKNOWN_ERROR, and serializes non-error throws', () => {
    expect(serializeError(new TypeError('bad'))).toMatchObject({ name: 'TypeError', code: 'UNKNOWN_ERROR', message: 'bad' })
    expect(serializeError('plain')).toMatchObject({ name: 'NonError', code: 'UNKNOWN_ERROR', message: 'plain', cause: 'plain' })
    expect(serializeError(undefined)).toMatchObject({ message: 'undefined was thrown' })
    expect(serializeError(5n)).toMatchObject({ message: 'a non-error value of type bigint was thrown' })
  })

  it('cuts circular cause chains and drops fields JSON cannot carry', () => {
    const error = new Error('loop') as Error & { big?: bigint; self?: unknown }
    ;(error as { cause?: unknown }).cause = error
    error.big = 1n
    const serialized = serializeError(error)
    expect(serialized.cause).toBe('[circular cause]')
    expect(serialized.data).toBeUndefined()
  })

  it('serializes the members of an AggregateError', () => {
    const serialized = serializeError(new AggregateError([new Error('a'), new Error('b')], 'both'))
    expect(serialized.data?.errors).toMatchObject([{ message: 'a' }, { message: 'b' }])
  })

  it('never throws, and always yields a valid, JSON-stable SerializedError', () => {
    const thrown = fc.oneof(
      fc.anything(),
      fc.string().map((message) => new Error(message)),
      fc.tuple(fc.string(), fc.anything()).map(([message, cause]) => new Error(message, { cause })),
      fc.tuple(fc.string(), fc.dictionary(fc.string(), fc.anything())).map(([message, fields]) => Object.assign(new LocusError(message, { code: 'X' }), fields)),
    )
    fc.assert(
      fc.property(thrown, (value) => {
        const serialized = serializeError(value)
        const json = JSON.parse(JSON.stringify(serialized)) as unknown
        expect(SerializedErrorSchema.safeParse(json).success).toBe(true)
      }),
      { numRuns: 300 },
    )
  })
})

describe('deserializeError', () => {
  it('rebuilds a registered error by name through its factory', () => {
    registerErrorFactory('QuotaError', (serialized) => new QuotaError(Number(serialized.data?.limit)))
    const rebuilt = deserializeError(JSON.parse(JSON.stringify(serializeError(new QuotaError(7)))))
    expect(rebuilt instanceof QuotaError).toBe(true)
    expect(rebuilt).toMatchObject({ limit: 7, code: 'QUOTA_REACHED' })
  })

  it('rebuilds an unregistered error as a LocusError with its name, code, fields and cause', () => {
    const serialized = serializeError(Object.assign(new LocusError('outer', { code: 'OUTER', cause: new Error('inner') }), { detail: 'x' }))
    const rebuilt = deserializeError({ ...serialized, name: 'SomethingUnknownError' })
    expect(LocusError.isInstance(rebuilt)).toBe(true)
    expect(hasLocusErrorCode(rebuilt, 'OUTER')).toBe(true)
    expect(rebuilt).toMatchObject({ name: 'SomethingUnknownError', message: 'outer', detail: 'x' })
    expect((rebuilt.cause as Error).message).toBe('inner')
  })

  it('rebuilds the outcome package errors it knows', () => {
    const original = new WorkflowResultPreparationError('circular', '$.items[0]')
    const rebuilt = deserializeError(serializeError(original))
    expect(isWorkflowResultPreparationError(rebuilt)).toBe(true)
    expect(rebuilt).toMatchObject({ reason: 'circular', path: '$.items[0]', message: original.message })
  })

  it('falls back to the generic rebuild when a factory throws, keeping the factory error', () => {
    registerErrorFactory('FragileError', () => {
      throw new Error('factory broke')
    })
    const rebuilt = deserializeError({ name: 'FragileError', code: 'FRAGILE', message: 'x' })
    expect(rebuilt).toMatchObject({ code: 'FRAGILE', name: 'FragileError' })
    expect((rebuilt as unknown as { factoryError: Error }).factoryError.message).toBe('factory broke')
  })

  it('shares the registry between two installed copies of the package', async () => {
    const specifier = './serialized-error.ts?second-copy'
    const copy = (await import(/* @vite-ignore */ specifier)) as typeof SerializedErrorModule
    expect(copy.registerErrorFactory).not.toBe(registerErrorFactory)
    copy.registerErrorFactory('CopyRegisteredError', () => new RangeError('from the copy'))
    expect(deserializeError({ name: 'CopyRegisteredError', code: 'C', message: 'm' })).toBeInstanceOf(RangeError)
  })

  it('refuses a registration without a name or a factory', () => {
    expect(() => {
      registerErrorFactory('', () => new Error('x'))
    }).toThrow(/non-empty string/)
    expect(() => {
      registerErrorFactory('X', 'nope' as never)
    }).toThrow(/needs a function/)
  })
})
