import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ticks } from '../test/support.js'
import { parallel } from './parallel.js'
import { createRunScope } from './run-scope.js'
import { runInScope } from './slot-context.js'

async function peakConcurrency(count: number, run: (thunks: (() => Promise<number>)[]) => Promise<unknown>): Promise<number> {
  let active = 0
  let peak = 0
  await run(
    Array.from({ length: count }, (_, index) => async () => {
      active += 1
      peak = Math.max(peak, active)
      await ticks(1 + (index % 3))
      active -= 1
      return index
    }),
  )
  return peak
}

describe('concurrency: "A concurrency option (queues branches ...; default from the run scope)"', () => {
  it('never runs more than the limit at once, and reaches it (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 1, max: 6 }), async (count, limit) => {
        const peak = await peakConcurrency(count, (thunks) => parallel(thunks, { concurrency: limit }))
        expect(peak).toBe(Math.min(count, limit))
      }),
    )
  })

  it('is unbounded by default', async () => {
    expect(await peakConcurrency(50, (thunks) => parallel(thunks))).toBe(50)
  })

  it('takes its default from the run scope; the option wins over it', async () => {
    const scope = createRunScope({ concurrency: 2 })
    expect(await runInScope(scope, () => peakConcurrency(10, (thunks) => parallel(thunks)))).toBe(2)
    expect(await runInScope(scope, () => peakConcurrency(10, (thunks) => parallel(thunks, { concurrency: 5 })))).toBe(5)
  })

  it('counts per group: a nested group has its own limit', async () => {
    const scope = createRunScope({ concurrency: 1 })
    const result = await runInScope(scope, () => parallel([() => parallel([async () => 'a', async () => 'b'])]))
    expect(result).toEqual([['a', 'b']])
  })

  it('settles many synchronous branches without deep recursion', async () => {
    const thunks = Array.from({ length: 50_000 }, (_, index) => () => index)
    const result = await parallel(thunks, { concurrency: 1 })
    expect(result.length).toBe(50_000)
    expect(result[49_999]).toBe(49_999)
  })
})
