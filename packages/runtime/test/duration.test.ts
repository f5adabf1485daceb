import { durationMs } from '@locus/runtime'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

describe('durationMs', () => {
  it('reads an amount with a unit, and nothing else, as milliseconds', () => {
    expect(durationMs('7d')).toBe(604_800_000)
    expect(durationMs(' 1.5s ')).toBe(1_500)
    for (const text of ['10', '10x', 'd', '', '0s', '-1s', '0.4ms', '1e3s', '7 d']) expect(durationMs(text)).toBeUndefined()
  })

  it('property: a whole amount with a unit reads back as amount times the unit', () => {
    const units = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100_000 }), fc.constantFrom(...(Object.keys(units) as (keyof typeof units)[])), (amount, unit) => {
        expect(durationMs(`${amount}${unit}`)).toBe(amount * units[unit])
      }),
    )
  })
})
