import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { compareOrdinals } from './compare-ordinals.js'

const sign = (value: number): number => (value > 0 ? 1 : value < 0 ? -1 : 0)
const ordinalArbitrary = fc.oneof(
  fc.stringMatching(/^(g?\d{1,3}(\[\d{1,3}\])?)(\.\d{1,3}(\[\d{1,3}\])?){0,3}$/),
  fc.string({ maxLength: 8 }),
)

describe('compareOrdinals', () => {
  it('compares numeric segments as numbers: "2" < "10"', () => {
    expect(compareOrdinals('2', '10')).toBeLessThan(0)
    expect(compareOrdinals('10', '2')).toBeGreaterThan(0)
    expect(compareOrdinals('1[10].1', '1[9].1')).toBeGreaterThan(0)
  })

  it('puts "2[3].1" after "2" and before "3"', () => {
    expect(compareOrdinals('2', '2[3].1')).toBeLessThan(0)
    expect(compareOrdinals('2[3].1', '3')).toBeLessThan(0)
  })

  it('sorts a mixed list for a report', () => {
    expect(['10', '2[3].1', '2', '1', '2[10]', '2[3]', 'g1[2].1'].sort(compareOrdinals)).toEqual([
      '1',
      '2',
      '2[3]',
      '2[3].1',
      '2[10]',
      '10',
      'g1[2].1',
    ])
  })

  it('compares digit runs longer than a double can hold exactly', () => {
    expect(compareOrdinals('90071992547409931', '90071992547409930')).toBeGreaterThan(0)
  })

  it('tells "01" and "1" apart, so only equal strings compare as 0', () => {
    expect(compareOrdinals('01', '1')).not.toBe(0)
    expect(compareOrdinals('1', '1')).toBe(0)
  })

  it('property: a total order (reflexive zero, antisymmetric, transitive)', () => {
    fc.assert(
      fc.property(ordinalArbitrary, ordinalArbitrary, ordinalArbitrary, (a, b, c) => {
        expect(compareOrdinals(a, b) === 0).toBe(a === b)
        expect(sign(compareOrdinals(a, b)) + sign(compareOrdinals(b, a))).toBe(0)
        if (compareOrdinals(a, b) < 0 && compareOrdinals(b, c) < 0) expect(compareOrdinals(a, c)).toBeLessThan(0)
      }),
      { numRuns: 2000 },
    )
  })

  it('property: plain numbers sort by value', () => {
    fc.assert(
      fc.property(fc.nat(), fc.nat(), (a, b) => {
        expect(sign(compareOrdinals(String(a), String(b)))).toBe(sign(a - b))
      }),
    )
  })
})
