import { createRuntime, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { tempRunsDir, testServer } from './helpers.js'

const START = Date.parse('2026-03-01T00:00:00.000Z')

/** The run clock (`RunOptions.clock`) of a test: time moves only when `advance` moves it. */
function testClock(): { now(): number; sleep(ms: number, signal?: AbortSignal): Promise<void>; sleeping(): number; advance(ms: number): void } {
  let now = START
  const sleepers: { wakeAt: number; wake: () => void }[] = []
  return {
    now: () => now,
    sleep: (ms, signal) =>
      new Promise<void>((resolve) => {
        const sleeper = { wakeAt: now + ms, wake: resolve }
        sleepers.push(sleeper)
        signal?.addEventListener('abort', () => {
          resolve()
        })
      }),
    sleeping: () => sleepers.length,
    advance(ms) {
      now += ms
      for (const sleeper of sleepers.filter((candidate) => candidate.wakeAt <= now)) {
        sleepers.splice(sleepers.indexOf(sleeper), 1)
        sleeper.wake()
      }
    },
  }
}

const napper = defineWorkflow({
  name: 'napper',
  run: async ({ sleep }) => {
    await sleep('7d')
    return { ok: true }
  },
})

describe('a sleeping run over HTTP', () => {
  it('reads as waiting, with the time it sleeps until, live and in the list, and completed once its timer fires', async () => {
    const clock = testClock()
    const server = await testServer({ runtime: createRuntime({ workflows: [napper], runsDir: tempRunsDir(), defaults: { clock } }) })
    const started = await server.json<{ runId: string }>('/v1/workflows/napper/runs', { method: 'POST', body: JSON.stringify({ input: null }) })
    const runId = started.body.runId
    for (let round = 0; round < 2_000 && clock.sleeping() === 0; round += 1) await new Promise((resolve) => setImmediate(resolve))
    const dueAt = new Date(START + 7 * 86_400_000).toISOString()
    const asleep = await server.json<{ status: string; sleepingUntil: string | null; executions: { status: string }[] }>(`/v1/runs/${runId}`)
    expect(asleep.body).toMatchObject({ status: 'waiting', sleepingUntil: dueAt, executions: [{ status: 'waiting' }] })
    const listed = await server.json<{ runs: { runId: string }[] }>('/v1/runs?status=waiting')
    expect(listed.body.runs.map((run) => run.runId)).toEqual([runId])
    // The inspector says so too, in the run list and on the run's page.
    expect(await (await server.request('/')).text()).toContain(`Sleeping until ${dueAt}`)
    expect(await (await server.request(`/runs/${runId}`)).text()).toContain(`Sleeping until ${dueAt}`)
    clock.advance(7 * 86_400_000)
    await server.json(`/v1/runs/${runId}/result?wait=10`)
    expect((await server.json(`/v1/runs/${runId}`)).body).toMatchObject({ status: 'completed', sleepingUntil: null })
  })
})
