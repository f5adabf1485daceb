import { describe, expect, it } from 'vitest'
import { createManualClock } from './manual-clock.js'
import { createRetryBudget } from './retry-budget.js'

describe('createRetryBudget: a shared token bucket of retries', () => {
  it('starts full, gives one retry per token, then refuses', () => {
    const budget = createRetryBudget({ capacity: 2, refillPerSecond: 0, clock: createManualClock() })
    expect([budget.tryWithdraw(), budget.tryWithdraw(), budget.tryWithdraw()]).toEqual([true, true, false])
  })

  it('refills at refillPerSecond, never above capacity', async () => {
    const clock = createManualClock()
    const budget = createRetryBudget({ capacity: 3, refillPerSecond: 2, clock })
    while (budget.tryWithdraw());
    await clock.advance(500)
    expect(budget.available()).toBe(1)
    expect(budget.tryWithdraw()).toBe(true)
    expect(budget.tryWithdraw()).toBe(false)
    await clock.advance(60_000)
    expect(budget.available()).toBe(3)
  })

  it('is not drained by a clock that steps backwards', () => {
    let now = 10_000
    const budget = createRetryBudget({ capacity: 5, refillPerSecond: 1, clock: { now: () => now, sleep: () => Promise.resolve() } })
    budget.tryWithdraw()
    now = 0
    expect(budget.available()).toBe(4)
  })

  it('defaults to 100 retries refilling at 10 a second', () => {
    const budget = createRetryBudget({ clock: createManualClock() })
    expect(budget.available()).toBe(100)
  })

  it.each([
    ['capacity', { capacity: 0 }],
    ['capacity', { capacity: Number.NaN }],
    ['refillPerSecond', { refillPerSecond: -1 }],
    ['refillPerSecond', { refillPerSecond: '5' as unknown as number }],
  ])('refuses a bad %s with a RetryOptionsError naming it', (field, options) => {
    expect(() => createRetryBudget(options)).toThrow(expect.objectContaining({ field, code: 'RETRY_OPTIONS_INVALID' }))
  })
})
