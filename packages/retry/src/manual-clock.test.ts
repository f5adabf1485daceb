import { describe, expect, it } from 'vitest'
import { createManualClock } from './manual-clock.js'
import { isRetryOptionsError } from './retry-options-error.js'

describe('createManualClock', () => {
  it('starts where asked and moves only when advanced', async () => {
    const clock = createManualClock(500)
    expect(clock.now()).toBe(500)
    await clock.advance(250)
    expect(clock.now()).toBe(750)
  })

  it('wakes sleepers in time order, each at its own wake-up time', async () => {
    const clock = createManualClock()
    const woke: [string, number][] = []
    void clock.sleep(300).then(() => woke.push(['c', clock.now()]))
    void clock.sleep(100).then(() => woke.push(['a', clock.now()]))
    void clock.sleep(100).then(() => woke.push(['b', clock.now()]))
    expect(clock.pendingSleeps()).toEqual([
      { wakeAt: 100, ms: 100 },
      { wakeAt: 100, ms: 100 },
      { wakeAt: 300, ms: 300 },
    ])
    await clock.advance(200)
    expect(woke).toEqual([
      ['a', 100],
      ['b', 100],
    ])
    expect(clock.now()).toBe(200)
    await clock.advance(100)
    expect(woke.at(-1)).toEqual(['c', 300])
  })

  it('lets a woken task schedule its next sleep before time moves on', async () => {
    const clock = createManualClock()
    const woke: number[] = []
    const loop = async (): Promise<void> => {
      for (let round = 0; round < 3; round += 1) {
        await clock.sleep(10)
        woke.push(clock.now())
      }
    }
    void loop()
    await clock.advance(100)
    expect(woke).toEqual([10, 20, 30])
  })

  it('resolves a sleep at once when its signal aborts, and forgets it', async () => {
    const clock = createManualClock()
    const controller = new AbortController()
    const sleeping = clock.sleep(1_000, controller.signal)
    controller.abort()
    await sleeping
    expect(clock.now()).toBe(0)
    expect(clock.pendingSleeps()).toEqual([])
    await clock.sleep(1_000, controller.signal)
    await clock.sleep(0)
  })

  it('runUntilIdle wakes everything and reports the time that passed', async () => {
    const clock = createManualClock()
    void clock.sleep(40).then(() => clock.sleep(60))
    expect(await clock.runUntilIdle()).toBe(100)
    expect(await clock.advanceToNextSleep()).toBe(false)
  })

  it('runUntilIdle stops a loop that never ends with a typed error', async () => {
    const clock = createManualClock()
    const forever = async (): Promise<void> => {
      for (;;) await clock.sleep(1)
    }
    void forever()
    await expect(clock.runUntilIdle(5)).rejects.toMatchObject({ field: 'maxWakeUps' })
  })

  it('refuses a bad start or advance with a RetryOptionsError', async () => {
    expect(() => createManualClock(Number.NaN)).toThrow(expect.objectContaining({ field: 'startMs' }))
    const error: unknown = await createManualClock()
      .advance(-1)
      .catch((caught: unknown) => caught)
    expect(isRetryOptionsError(error)).toBe(true)
  })
})
