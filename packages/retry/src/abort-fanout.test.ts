import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { offAbort, onAbort } from './abort-fanout.js'

describe('onAbort / offAbort', () => {
  it('calls each callback still registered exactly once, in registration order, when the signal aborts', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { maxLength: 60 }), (removed) => {
        const controller = new AbortController()
        const calls: number[] = []
        const callbacks = removed.map((_, index) => () => {
          calls.push(index)
        })
        for (const callback of callbacks) onAbort(controller.signal, callback)
        removed.forEach((remove, index) => {
          if (remove) offAbort(controller.signal, callbacks[index] as () => void)
        })
        controller.abort()
        controller.abort()
        expect(calls).toEqual(removed.flatMap((remove, index) => (remove ? [] : [index])))
      }),
    )
  })

  it('adds a single listener to the signal however many callbacks wait on it', () => {
    const controller = new AbortController()
    let added = 0
    const original = controller.signal.addEventListener.bind(controller.signal)
    controller.signal.addEventListener = ((...args: Parameters<AbortSignal['addEventListener']>) => {
      added += 1
      original(...args)
    })
    for (let index = 0; index < 1_000; index += 1) onAbort(controller.signal, () => undefined)
    expect(added).toBe(1)
  })

  it('keeps calling the other callbacks when one throws, and reports the error as uncaught', async () => {
    const controller = new AbortController()
    const calls: string[] = []
    onAbort(controller.signal, () => {
      calls.push('first')
      throw new Error('listener failed')
    })
    onAbort(controller.signal, () => calls.push('second'))
    const uncaught: unknown[] = []
    const listener = (error: unknown): void => {
      uncaught.push(error)
    }
    const previous = process.listeners('uncaughtException')
    process.removeAllListeners('uncaughtException')
    process.on('uncaughtException', listener)
    try {
      controller.abort()
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('uncaughtException', listener)
      for (const handler of previous) process.on('uncaughtException', handler)
    }
    expect(calls).toEqual(['first', 'second'])
    expect(uncaught).toMatchObject([{ message: 'listener failed' }])
  })
})
