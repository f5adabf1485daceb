import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ATTEMPT_TRIO_FIELDS } from './journal-line-schema.js'
import { JournalLineError } from './journal-line-error.js'
import { parseJournalLine } from './parse-journal-line.js'
import { SAMPLE_INPUTS, stamp } from '../test/sample-lines.js'

function refusal(value: unknown, lineNumber?: number): JournalLineError {
  try {
    parseJournalLine(value, lineNumber)
  } catch (error) {
    if (JournalLineError.isInstance(error)) return error
    throw new Error(`expected a JournalLineError, got ${String(error)}`)
  }
  throw new Error('expected parseJournalLine to refuse the line')
}

function without(line: object, fields: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(line).filter(([key]) => !fields.includes(key)))
}

/** Every non-empty proper subset of the trio, as the fields to remove. */
const partialRemovals = fc.subarray([...ATTEMPT_TRIO_FIELDS], { minLength: 1, maxLength: 2 })

describe('the attempt trio travels together', () => {
  it.each(['agent_start', 'agent_end', 'error'] as const)(
    'parseJournalLine refuses a %s line carrying one or two trio fields without the others, naming the missing ones',
    (type) => {
      fc.assert(
        fc.property(partialRemovals, (removed) => {
          const error = refusal(without(stamp(SAMPLE_INPUTS[type], 1), removed), 9)
          expect(error.code).toBe('JOURNAL_LINE_INVALID')
          expect([...(error.missing ?? [])].sort()).toEqual([...removed].sort())
          expect(error.lineNumber).toBe(9)
          for (const field of removed) expect(error.message).toContain(field)
          expect(error.message).toContain('line 9')
        }),
      )
    },
  )

  it.each(['agent_start', 'agent_end'] as const)('a %s line records one attempt, so it needs all three', (type) => {
    const error = refusal(without(stamp(SAMPLE_INPUTS[type], 1), ATTEMPT_TRIO_FIELDS))
    expect(error.missing).toEqual(['attempt', 'attempts', 'logicalCallId'])
  })

  it('an error line may carry none of the three (an error outside any agent call)', () => {
    const line = without(stamp(SAMPLE_INPUTS.error, 1), ATTEMPT_TRIO_FIELDS)
    expect(parseJournalLine(line)).toStrictEqual(line)
  })

  it('an error line that ends an attempt keeps the trio and its failureCause', () => {
    expect(parseJournalLine(stamp(SAMPLE_INPUTS.error, 1))).toMatchObject({
      failureCause: 'sdk-unavailable',
      attempt: 2,
      attempts: 2,
      logicalCallId: 'lc-1',
    })
  })

  it('refuses attempt greater than attempts', () => {
    expect(() => parseJournalLine({ ...stamp(SAMPLE_INPUTS.agent_start, 1), attempt: 3, attempts: 2 })).toThrow(/attempt must not exceed attempts/)
  })

  it('is a JournalLineError with a stable code, recognised across copies by code', () => {
    const error = refusal(without(stamp(SAMPLE_INPUTS.agent_end, 1), ['logicalCallId']))
    expect(error).toBeInstanceOf(JournalLineError)
    expect(error.name).toBe('JournalLineError')
    expect(JournalLineError.isInstance({ code: 'JOURNAL_LINE_INVALID' })).toBe(false)
  })
})
