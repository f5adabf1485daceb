import { createRuntime, createScriptedHost, defineTool, defineWorkflow } from '@locus/runtime'
import type { JournalLine } from '@locus/journal'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { tempRunsDir, testServer } from './helpers.js'

let stamped = 0
const stamp = defineTool({
  input: z.object({ n: z.number() }),
  run: ({ n }) => {
    stamped += 1
    return { n }
  },
})

const napper = defineWorkflow({
  name: 'napper',
  tools: { stamp },
  run: async ({ tool, sleep }) => {
    const first = await tool('stamp', { n: 1 })
    await sleep('1200ms')
    const second = await tool('stamp', { n: 2 })
    return { first, second }
  },
})

function runtimeOn(runsDir: string): ReturnType<typeof createRuntime> {
  return createRuntime({ workflows: [napper], host: createScriptedHost({ rules: [] }), runsDir })
}

async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 5_000): Promise<T> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

async function linesOf(runtime: ReturnType<typeof createRuntime>, runId: string): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  for (const info of await runtime.store.listExecutions(runId)) {
    for await (const line of runtime.store.readLines(info)) lines.push(line)
  }
  return lines
}

describe('locus serve parks a sleeping run on the file store', () => {
  it('suspends a run that only sleeps, holds nothing while it sleeps, and wakes it at its due time without running the first call again', async () => {
    stamped = 0
    const runtime = runtimeOn(tempRunsDir())
    const server = await testServer({ runtime, parkSleepingAfterMs: 50 })
    const started = await server.json<{ runId: string }>('/v1/workflows/napper/runs', { method: 'POST', body: JSON.stringify({ input: {} }) })
    const runId = started.body.runId
    // Parked: its row says suspended and no execution of it is live in the process.
    await waitFor(async () => ((await runtime.store.readRunRow(runId))?.status === 'suspended' && runtime.live(runId) === undefined ? true : undefined), 'the run to be parked')
    const listed = await server.json<{ runs: { runId: string; status: string }[] }>('/v1/runs?status=suspended')
    expect(listed.body.runs.map((run) => run.runId)).toEqual([runId])
    const result = await server.json<{ disposition: string; result: unknown }>(`/v1/runs/${runId}/result?wait=10`)
    expect(result.body).toMatchObject({ disposition: 'completed', result: { first: { n: 1 }, second: { n: 2 } } })
    expect(stamped).toBe(2)
    const fired = (await linesOf(runtime, runId)).filter((line) => line.type === 'timer_fired')
    expect(fired).toHaveLength(1)
    // Woken by the parking's own timer: late by its wake-up, not by a poll interval.
    expect(fired[0]?.type === 'timer_fired' ? fired[0].lateMs : -1).toBeLessThan(1_000)
    // Resumed ahead of the due time (the wake lead), so reading the run back is not added to its lateness.
    const lines = await linesOf(runtime, runId)
    const dueAt = lines.find((line) => line.type === 'timer_start' && line.replayed !== true)
    const resumedAt = lines.find((line) => line.type === 'run_start' && line.executionId !== runId)
    expect(dueAt?.type === 'timer_start' && resumedAt !== undefined ? Date.parse(resumedAt.ts) < Date.parse(dueAt.dueAt) : false).toBe(true)
  }, 20_000)

  it('wakes a run a stopped server parked, from the summary rows, when a new server starts on the store', async () => {
    stamped = 0
    const runsDir = tempRunsDir()
    const first = runtimeOn(runsDir)
    const before = await testServer({ runtime: first, parkSleepingAfterMs: 50 })
    const started = await before.json<{ runId: string }>('/v1/workflows/napper/runs', { method: 'POST', body: JSON.stringify({ input: {} }) })
    const runId = started.body.runId
    await waitFor(async () => ((await first.store.readRunRow(runId))?.status === 'suspended' ? true : undefined), 'the run to be parked')
    await before.close()

    const second = runtimeOn(runsDir)
    const after = await testServer({ runtime: second, parkSleepingAfterMs: 50 })
    // Not resumed at start (its timer is not due): it stays parked until then, then completes.
    const result = await after.json<{ disposition: string; result: unknown }>(`/v1/runs/${runId}/result?wait=10`)
    expect(result.body).toMatchObject({ disposition: 'completed', result: { first: { n: 1 }, second: { n: 2 } } })
    expect(stamped).toBe(2)
    const lines = await linesOf(second, runId)
    expect(lines.filter((line) => line.type === 'timer_fired' && line.replayed !== true)).toHaveLength(1)
    // The first call is served from the journal on resume (a replayed line), never run again.
    expect(lines.filter((line) => line.type === 'tool_end' && line.replayed !== true)).toHaveLength(2)
  }, 20_000)
})
