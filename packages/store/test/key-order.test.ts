import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { boundedWrites } from '../src/key-order.js'

describe('boundedWrites', () => {
  it('never runs more than its limit at once, starts writes in the order issued, and runs every one (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6 }), fc.array(fc.tuple(fc.integer({ min: 1, max: 3 }), fc.boolean()), { minLength: 1, maxLength: 40 }), async (limit, writes) => {
        const slots = boundedWrites(limit)
        let inFlight = 0
        let most = 0
        const started: number[] = []
        const results = await Promise.allSettled(
          writes.map(([ticks, fails], index) =>
            slots(async () => {
              started.push(index)
              inFlight += 1
              most = Math.max(most, inFlight)
              for (let tick = 0; tick < ticks; tick += 1) await Promise.resolve()
              inFlight -= 1
              if (fails) throw new Error(`write ${index} failed`)
              return index
            }),
          ),
        )
        expect(most).toBeLessThanOrEqual(limit)
        expect(most).toBe(Math.min(limit, writes.length))
        expect(started).toEqual(writes.map((_, index) => index))
        // A failed write frees its slot like any other and answers for itself.
        expect(results.map((result) => result.status)).toEqual(writes.map(([, fails]) => (fails ? 'rejected' : 'fulfilled')))
      }),
    )
  })

  it('refuses a limit that is not a whole number of at least 1', () => {
    expect(() => boundedWrites(0)).toThrow(/at least 1, not 0/)
    expect(() => boundedWrites(1.5)).toThrow(RangeError)
  })
})
