import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { CliError } from './cli-error.js'
import { parseDuration, parsePositiveInteger } from './parse-duration.js'

describe('parseDuration', () => {
  it('reads 500ms, 30s, 10m, 1h and 30d (the forms the issue names for --deadline and --since)', () => {
    expect(parseDuration('500ms')).toBe(500)
    expect(parseDuration('30s')).toBe(30_000)
    expect(parseDuration('10m')).toBe(600_000)
    expect(parseDuration('1h')).toBe(3_600_000)
    expect(parseDuration('30d')).toBe(2_592_000_000)
    expect(parseDuration('1.5s')).toBe(1_500)
  })

  it('refuses a bare number, an unknown unit and zero with a CLI_USAGE error naming the flag', () => {
    for (const text of ['10', '10x', 'm', '', '0s', '-1s']) {
      let thrown: unknown
      try {
        parseDuration(text, '--deadline')
      } catch (error) {
        thrown = error
      }
      expect(CliError.isInstance(thrown)).toBe(true)
      expect((thrown as CliError).code).toBe('CLI_USAGE')
      expect((thrown as CliError).message).toContain('--deadline')
    }
  })

  it('property: a whole amount with a unit reads back as amount times the unit', () => {
    const units = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000 }), fc.constantFrom(...(Object.keys(units) as (keyof typeof units)[])), (amount, unit) => {
        expect(parseDuration(`${amount}${unit}`)).toBe(amount * units[unit])
      }),
    )
  })
})

describe('parsePositiveInteger', () => {
  it('accepts whole numbers from 1 and refuses the rest, naming the flag', () => {
    expect(parsePositiveInteger('3', '--max-agents')).toBe(3)
    for (const text of ['0', '-2', '1.5', 'three', '']) {
      expect(() => parsePositiveInteger(text, '--max-agents')).toThrow(/--max-agents must be a whole number of at least 1/)
    }
  })
})
