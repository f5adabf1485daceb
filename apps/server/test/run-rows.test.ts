import { statSync } from 'node:fs'
import { join } from 'node:path'
import { createRuntime, createScriptedHost, defineDeferredTool, defineTool, defineWorkflow } from '@locus/runtime'
import { type RunStore, createFileRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { WORKFLOWS, tempRunsDir, testServer } from './helpers.js'

/** A store that counts every read that would touch a journal, a run's executions or an artifact. */
function countingStore(store: RunStore): { store: RunStore; reads: () => number } {
  let reads = 0
  return {
    reads: () => reads,
    store: {
      ...store,
      readLines: (ref, options) => {
        reads += 1
        return store.readLines(ref, options)
      },
      tail: (ref, options) => {
        reads += 1
        return store.tail(ref, options)
      },
      listExecutions: (runId) => {
        reads += 1
        return store.listExecutions(runId)
      },
      readArtifact: (ref, key) => {
        reads += 1
        return store.readArtifact(ref, key)
      },
    },
  }
}

const RUNS = 2_000
const WORKFLOW_COUNT = 40

describe('GET /v1/runs reads summary rows', () => {
  it(`over ${String(RUNS)} stored runs, filters by workflow and status and pages with a cursor without reading a journal line`, async () => {
    const runsDir = tempRunsDir()
    const writer = createFileRunStore(runsDir)
    const expected = new Map<string, string[]>()
    for (let index = 0; index < RUNS; index += 1) {
      const runId = `run-${String(index).padStart(5, '0')}`
      const workflow = `wf-${String(index % WORKFLOW_COUNT)}`
      const execution = await writer.createExecution({ runId, kind: 'root', now: () => 1_700_000_000_000 + index })
      execution.append({ type: 'run_start', workflow, input: {}, options: {} })
      // Every third run of a workflow ends; the rest are left running.
      if (index % 3 === 0) execution.append({ type: 'run_end', disposition: 'completed', ok: true, result: null, durationMs: 1 })
      await execution.close()
      expected.set(workflow, [runId, ...(expected.get(workflow) ?? [])])
    }
    const sampleRow = join(runsDir, 'run-00007', 'run.json')
    const rowWrittenAt = statSync(sampleRow).mtimeMs

    // A new process on the directory: nothing is held live, every answer comes from run.json files.
    const counted = countingStore(createFileRunStore(runsDir))
    const runtime = createRuntime({ workflows: WORKFLOWS, host: createScriptedHost({ rules: [] }), store: counted.store })
    const server = await testServer({ runtime })

    const first = await server.json<{ runs: { runId: string; workflow: string; status: string }[]; nextCursor: string | null }>('/v1/runs?workflow=wf-7&limit=5')
    expect(first.status).toBe(200)
    expect(first.body.runs.map((run) => run.runId)).toEqual(expected.get('wf-7')?.slice(0, 5))
    expect(first.body.nextCursor).not.toBeNull()
    const second = await server.json<{ runs: { runId: string }[] }>(`/v1/runs?workflow=wf-7&limit=5&cursor=${first.body.nextCursor ?? ''}`)
    expect(second.body.runs.map((run) => run.runId)).toEqual(expected.get('wf-7')?.slice(5, 10))
    const done = await server.json<{ runs: { runId: string; status: string }[] }>('/v1/runs?workflow=wf-7&status=completed&limit=100')
    const completed = (expected.get('wf-7') ?? []).filter((runId) => Number(runId.slice(4)) % 3 === 0)
    expect(done.body.runs.map((run) => run.runId)).toEqual(completed)
    expect(done.body.runs.every((run) => run.status === 'completed')).toBe(true)
    const none = await server.json<{ runs: unknown[] }>('/v1/runs?workflow=no-such-workflow')
    expect(none.body.runs).toEqual([])

    expect(counted.reads()).toBe(0)
    // No row was rebuilt from a journal behind the counter's back.
    expect(statSync(sampleRow).mtimeMs).toBe(rowWrittenAt)
  }, 60_000)

  it('answers a cursor that does not decode with 400 naming the cursor', async () => {
    const server = await testServer()
    const response = await server.json<{ error: { code: string; message: string } }>('/v1/runs?cursor=nope')
    expect(response.status).toBe(400)
    expect(response.body.error.message).toMatch(/cursor/)
  })
})

describe('GET /v1/runs/{id}/result of a run this server executes', () => {
  it('answers 202 from the live fold without reading the store, then the result once the run ended', async () => {
    const counted = countingStore(createFileRunStore(tempRunsDir()))
    const host = createScriptedHost({ rules: [{ match: { prompt: 'hang' }, steps: [{ hang: true }] }] })
    const runtime = createRuntime({ workflows: WORKFLOWS, host, store: counted.store })
    const server = await testServer({ runtime })
    const started = await server.json<{ runId: string }>('/v1/workflows/waits/runs', { method: 'POST', body: JSON.stringify({ input: {} }) })
    const runId = started.body.runId
    const before = counted.reads()
    for (const wait of ['', '?wait=0']) {
      const pending = await server.json<{ status: string; executionId: string }>(`/v1/runs/${runId}/result${wait}`)
      expect(pending.status).toBe(202)
      expect(pending.body).toMatchObject({ status: 'running', executionId: runId })
    }
    expect(counted.reads()).toBe(before)
    const waiting = server.json<{ disposition: string; ok: boolean }>(`/v1/runs/${runId}/result?wait=10`)
    expect((await server.request(`/v1/runs/${runId}/cancel`, { method: 'POST', body: JSON.stringify({ reason: 'enough' }) })).status).toBe(202)
    const ended = await waiting
    expect(ended.status).toBe(200)
    expect(ended.body).toMatchObject({ disposition: 'cancelled', ok: false })
  })
})

/** Two agent calls, a tool, then a deferral it waits on. */
const approval = defineWorkflow({
  name: 'approval',
  tools: {
    lookup: defineTool({ input: z.object({ id: z.number() }), run: ({ id }) => ({ id }) }),
    approve: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }),
  },
  run: async ({ agent, tool }) => {
    await agent('first')
    await agent('second')
    await tool('lookup', { id: 7 })
    return { ok: true, approval: await tool('approve', { amount: 42 }) }
  },
})

describe('GET /v1/runs/{id} of a run this server executes', () => {
  it('answers from the live fold with no store read, the same resource a reader of the store gets', async () => {
    const runsDir = tempRunsDir()
    const counted = countingStore(createFileRunStore(runsDir))
    const host = () => createScriptedHost({ rules: [{ steps: [{ text: 'fine' }] }] })
    const runtime = createRuntime({ workflows: [approval], host: host(), store: counted.store })
    const server = await testServer({ runtime })
    const runId = (await server.json<{ runId: string }>('/v1/workflows/approval/runs', { method: 'POST', body: JSON.stringify({ input: null }) })).body.runId
    for (let tries = 0; runtime.held(runId)?.view.openDeferrals().length !== 1; tries += 1) {
      if (tries > 500) throw new Error('the run never waited on its deferral')
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    runtime.live(runId)?.flush()
    const before = counted.reads()
    const held = await server.json<Record<string, unknown> & { live: boolean; status: string; deferred: { deferredId: string }[]; counts: Record<string, number> }>(`/v1/runs/${runId}`)
    expect(counted.reads()).toBe(before)
    expect(held.status).toBe(200)
    expect(held.body).toMatchObject({ live: true, status: 'waiting', deferred: [{ tool: 'approve', args: { amount: 42 } }] })
    expect(held.body.counts).toMatchObject({ agentCalls: 2, toolCalls: 2 })
    // Another server on the same directory holds nothing: it reads the store, and must find the same run.
    const reader = await testServer({ runtime: createRuntime({ workflows: [approval], host: host(), runsDir }) })
    const stored = await reader.json(`/v1/runs/${runId}`)
    expect({ ...held.body, live: false }).toEqual(stored.body)
    // Once answered and ended, the run is read from the store again (its result is there).
    const deferredId = held.body.deferred[0]?.deferredId ?? ''
    await server.json(`/v1/runs/${runId}/deferred/${deferredId}/resolve`, { method: 'POST', body: JSON.stringify({ result: { approved: true } }) })
    await server.json(`/v1/runs/${runId}/result?wait=10`)
    expect(runtime.held(runId)).toBeUndefined()
    expect((await server.json(`/v1/runs/${runId}`)).body).toMatchObject({ status: 'completed', live: false })
  })
})
