import { defineSchedule, defineWorkflow } from '@locus/runtime'
import { createMemoryRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createTestRuntime } from '../src/index.js'

const slow = defineWorkflow({
  name: 'slow',
  input: z.object({ n: z.number() }),
  async run({ sleep }) {
    await sleep('2500ms')
    return { ok: true }
  },
})

describe('createTestRuntime with schedules', () => {
  it('fires slots as clock.advance passes them: every 1s, skip over a 2.5 s run, 10 s in no wall time', async () => {
    const store = createMemoryRunStore()
    const runtime = createTestRuntime({
      workflows: [slow],
      store,
      schedules: [defineSchedule({ id: 'tick', workflow: 'slow', every: '1s', input: { n: 1 }, overlap: 'skip', catchUpWindow: '3s' })],
    })
    const began = performance.now()
    await runtime.clock.advance('10s')
    const slots = await store.schedules!.listSlots('tick')
    expect(slots.map((slot) => slot.outcome).reverse()).toEqual([
      'started',
      'skipped-overlap',
      'skipped-overlap',
      'started',
      'skipped-overlap',
      'skipped-overlap',
      'started',
      'skipped-overlap',
      'skipped-overlap',
      'started',
    ])
    const done = await Promise.all(slots.filter((slot) => slot.outcome === 'started').slice(1).map(async (slot) => (await runtime.get(slot.runId!)).summary.standing))
    expect(done).toEqual(['completed', 'completed', 'completed'])
    expect(performance.now() - began).toBeLessThan(5_000)
    await runtime.close()
  })

  it('refuses a schedule whose input its workflow refuses when the runtime is created', () => {
    expect(() =>
      createTestRuntime({ workflows: [slow], schedules: [defineSchedule({ id: 'bad', workflow: 'slow', every: '1s', input: { n: 'x' }, overlap: 'skip', catchUpWindow: '1s' })] }),
    ).toThrow(/does not fit workflow "slow"/)
  })
})
