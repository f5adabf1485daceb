import type { JournalLine } from '@locus/journal'
import { defineWorkflow } from '@locus/runtime'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type TestRuntime, createTestRuntime } from '../src/index.js'

/** Sleeps each duration in turn, noting the clock when it wakes. */
const sleeper = defineWorkflow({
  name: 'sleeper',
  input: z.object({ naps: z.array(z.number()) }),
  async run({ input, sleep }) {
    for (const nap of input.naps) await sleep(nap)
    return { ok: true, naps: input.naps.length }
  },
})

interface Timer {
  readonly dueAt: number
  readonly fired: number[]
}

/** Every timer of a run as its journal shows it: when it was due, and each time it fired. */
async function timersOf(runtime: TestRuntime, runId: string): Promise<Map<string, Timer>> {
  const timers = new Map<string, Timer>()
  const lines: JournalLine[] = []
  for (const info of await runtime.store.listExecutions(runId)) for await (const line of runtime.store.readLines(info)) lines.push(line)
  for (const line of lines) {
    if (line.type === 'timer_start') timers.set(line.timerId, { dueAt: Date.parse(line.dueAt), fired: [] })
    if (line.type === 'timer_fired') timers.get(line.timerId)?.fired.push(Date.parse(line.firedAt))
  }
  return timers
}

describe('the virtual clock (property)', () => {
  it('advanced in random steps, fires each timer of random sleep sequences exactly once, at its dueAt and never before', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.integer({ min: 0, max: 10_000 }), { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 3 }),
        fc.array(fc.integer({ min: 0, max: 7_000 }), { minLength: 1, maxLength: 20 }),
        async (runsOfNaps, steps) => {
          const runtime = createTestRuntime({ workflows: [sleeper] })
          const handles = await Promise.all(runsOfNaps.map((naps) => runtime.start('sleeper', { input: { naps } })))
          const total = Math.max(...runsOfNaps.map((naps) => naps.reduce((sum, nap) => sum + nap, 0)))
          let advanced = 0
          // The random steps, then one more to be past every sleep.
          for (const step of [...steps, total]) {
            await runtime.clock.advance(step)
            advanced += step
            const now = runtime.clock.now()
            for (const handle of handles) {
              for (const [timerId, timer] of await timersOf(runtime, handle.runId)) {
                // Due by now: fired once, exactly when due. Not due: not fired.
                expect(timer.fired, `${timerId} at ${now}`).toEqual(timer.dueAt <= now ? [timer.dueAt] : [])
              }
            }
            if (advanced >= total) break
          }
          for (const [index, handle] of handles.entries()) {
            expect(await handle.done).toMatchObject({ disposition: 'completed', result: { naps: runsOfNaps[index]?.length } })
            expect((await timersOf(runtime, handle.runId)).size).toBe(runsOfNaps[index]?.length)
          }
        },
      ),
      { numRuns: 40 },
    )
  })
})
