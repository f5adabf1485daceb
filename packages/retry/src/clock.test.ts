import { afterEach, describe, expect, it, vi } from 'vitest'
import { systemClock } from './clock.js'

afterEach(() => {
  vi.useRealTimers()
})

describe('systemClock', () => {
  it('reads Date.now()', () => {
    vi.useFakeTimers({ now: 1_234 })
    expect(systemClock.now()).toBe(1_234)
  })

  it('sleeps on a timer and clears it when the signal aborts', async () => {
    vi.useFakeTimers()
    const controller = new AbortController()
    let woke = false
    const sleeping = systemClock.sleep(60_000, controller.signal).then(() => (woke = true))
    expect(vi.getTimerCount()).toBe(1)
    controller.abort()
    await sleeping
    expect(woke).toBe(true)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('wakes after the delay', async () => {
    vi.useFakeTimers()
    let woke = false
    void systemClock.sleep(2_000).then(() => (woke = true))
    await vi.advanceTimersByTimeAsync(1_999)
    expect(woke).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    expect(woke).toBe(true)
  })

  it('chains timers for a sleep longer than Node allows one timer (about 24.8 days)', async () => {
    vi.useFakeTimers()
    let woke = false
    const thirtyDays = 30 * 24 * 3_600_000
    void systemClock.sleep(thirtyDays).then(() => (woke = true))
    await vi.advanceTimersByTimeAsync(2_147_483_647)
    expect(woke).toBe(false)
    await vi.advanceTimersByTimeAsync(thirtyDays - 2_147_483_647)
    expect(woke).toBe(true)
  })

  it('resolves at once for 0 ms, NaN, or an already aborted signal, without a timer', async () => {
    vi.useFakeTimers()
    await systemClock.sleep(0)
    await systemClock.sleep(Number.NaN)
    await systemClock.sleep(1_000, AbortSignal.abort())
    expect(vi.getTimerCount()).toBe(0)
  })
})
