import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type CostReservation, Usd, boundPromptTokens, createCostLedger, displayUsd, formatUsd, parseUsd } from '../src/index.js'

const usd = (text: string) => new Usd(text)

describe('the cost ledger', () => {
  it('holds a worst case, then counts what was really spent and frees the rest', () => {
    const ledger = createCostLedger({ limit: usd('1') })
    const held = ledger.reserve(usd('0.4'))
    expect(held.ok).toBe(true)
    expect(formatUsd(ledger.remaining() ?? usd('-1'))).toBe('0.600000')
    if (held.ok) ledger.settle(held.reservation, usd('0.1'))
    expect(formatUsd(ledger.spent())).toBe('0.100000')
    expect(formatUsd(ledger.reserved())).toBe('0.000000')
    expect(formatUsd(ledger.remaining() ?? usd('-1'))).toBe('0.900000')
  })

  it('refuses a worst case that does not fit, saying which budget and what was left', () => {
    const ledger = createCostLedger({ limit: usd('2.50'), spent: usd('2.2') })
    const refused = ledger.reserve(usd('0.5'))
    expect(refused.ok).toBe(false)
    if (!refused.ok) {
      expect(refused.refusal.scope).toBe('run')
      expect(refused.refusal.reason).toBe("the run's cost budget of $2.50 was spent")
      expect(formatUsd(refused.refusal.remaining)).toBe('0.300000')
    }
  })

  it("holds a call's reservation in its run's ledger too, and names the tighter budget", () => {
    const run = createCostLedger({ limit: usd('1') })
    const call = createCostLedger({ limit: usd('0.3'), parent: run, scope: 'call' })
    const first = call.reserve(usd('0.2'))
    expect(first.ok && formatUsd(run.reserved())).toBe('0.200000')
    const second = call.reserve(usd('0.2'))
    expect(!second.ok && second.refusal.scope).toBe('call')
    run.record(usd('0.7'))
    const third = createCostLedger({ limit: usd('5'), parent: run, scope: 'call' }).reserve(usd('0.2'))
    expect(!third.ok && third.refusal.reason).toBe("the run's cost budget of $1.00 was spent")
    if (first.ok) call.release(first.reservation)
    expect(formatUsd(run.reserved())).toBe('0.000000')
  })

  it('never lets spent and held money pass the limit, over random attempts settled in any order', () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('reserve' as const), micros: fc.integer({ min: 0, max: 400_000 }) }),
      fc.record({ kind: fc.constant('settle' as const), pick: fc.nat(), fraction: fc.double({ min: 0, max: 1, noNaN: true }) }),
      fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
    )
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3_000_000 }), fc.array(step, { maxLength: 80 }), (limitMicros, steps) => {
        const limit = new Usd(limitMicros).div(1_000_000)
        const ledger = createCostLedger({ limit })
        const open: CostReservation[] = []
        let refusedWhileFitting = false
        for (const action of steps) {
          if (action.kind === 'reserve') {
            const amount = new Usd(action.micros).div(1_000_000)
            const fits = ledger.spent().add(ledger.reserved()).add(amount).lte(limit)
            const result = ledger.reserve(amount)
            if (result.ok) open.push(result.reservation)
            else if (fits) refusedWhileFitting = true
          } else if (open.length > 0) {
            const [reservation] = open.splice(action.pick % open.length, 1)
            if (reservation === undefined) continue
            if (action.kind === 'settle') ledger.settle(reservation, reservation.worstCase.mul(action.fraction.toFixed(6)))
            else ledger.release(reservation)
          }
          expect(ledger.spent().add(ledger.reserved()).lte(limit)).toBe(true)
        }
        expect(refusedWhileFitting).toBe(false)
        for (const reservation of open) ledger.settle(reservation, reservation.worstCase)
        expect(ledger.spent().lte(limit)).toBe(true)
        expect(ledger.reserved().isZero()).toBe(true)
      }),
      { numRuns: 300 },
    )
  })

  it('settles a reservation once: a second settle or release changes nothing', () => {
    const ledger = createCostLedger()
    const held = ledger.reserve(usd('0.5'))
    if (!held.ok) throw new Error('an unlimited ledger refused')
    ledger.settle(held.reservation, usd('0.25'))
    ledger.settle(held.reservation, usd('0.25'))
    ledger.release(held.reservation)
    expect(formatUsd(ledger.spent())).toBe('0.250000')
    expect(ledger.reserved().isZero()).toBe(true)
    expect(ledger.remaining()).toBeUndefined()
  })
})

describe('amounts', () => {
  it('reads a budget as a positive decimal and names the option when it is not', () => {
    expect(formatUsd(parseUsd('2.50', '--max-cost', { positive: true }))).toBe('2.500000')
    expect(formatUsd(parseUsd(0.3, 'maxCostUsd'))).toBe('0.300000')
    for (const bad of ['-1', 'abc', '', '1e3', Number.NaN, Number.POSITIVE_INFINITY, null]) expect(() => parseUsd(bad, '--max-cost', { positive: true })).toThrow(/--max-cost must be a positive decimal number of dollars/)
    expect(() => parseUsd('0', '--max-cost', { positive: true })).toThrow(/got "0"/)
  })

  it('shows small amounts to the cent-fraction that shows them, and writes them exactly', () => {
    expect(displayUsd(usd('0.00421'))).toBe('$0.00421')
    expect(displayUsd(usd('12.3456'))).toBe('$12.35')
    expect(displayUsd(usd('0'))).toBe('$0')
    expect(formatUsd(usd('0.00000005'))).toBe('0.00000005')
  })

  it('bounds prompt tokens from above by the bytes of the text', () => {
    expect(boundPromptTokens(['héllo'])).toBe(6 + 8)
    expect(boundPromptTokens([])).toBe(0)
  })
})
