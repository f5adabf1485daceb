import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { RUN_ID_INVALID, RunIdError, validateRunId } from './run-ids.js'

describe('validateRunId', () => {
  it.each(['..', '.', '../escape', 'a/b', 'a\\b', '/etc', 'C:\\x', '', 'run 1', 'run\u00001', '.hidden', '-flag', 'x'.repeat(129)])(
    'refuses the path-escaping or unusable id %j',
    (id) => {
      expect(() => validateRunId(id)).toThrow(RunIdError)
    },
  )

  it('names the field, the id and the rule, with the registered code', () => {
    let caught: unknown
    try {
      validateRunId('a/b', 'executionId')
    } catch (error) {
      caught = error
    }
    expect(RunIdError.isInstance(caught)).toBe(true)
    expect(caught).toMatchObject({ code: RUN_ID_INVALID, id: 'a/b', field: 'executionId' })
    expect((caught as Error).message).toMatch(/Invalid executionId "a\/b": .*letters, digits/)
  })

  it('accepts exactly the ids that are one safe path segment', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 140 }), (id) => {
        const safe = id.length > 0 && id.length <= 128 && /^[A-Za-z0-9]/.test(id) && /^[A-Za-z0-9._-]*$/.test(id)
        if (safe) expect(validateRunId(id)).toBe(id)
        else expect(() => validateRunId(id)).toThrow(RunIdError)
      }),
      { numRuns: 500 },
    )
  })
})
