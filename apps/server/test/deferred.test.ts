import { createRuntime, defineDeferredTool, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { tempRunsDir, testServer } from './helpers.js'

const approval = defineWorkflow({
  name: 'approval',
  tools: { approve: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },
  run: async ({ tool }) => ({ ok: true, approval: await tool('approve', { amount: 42 }) }),
})

async function waitForDeferral(server: Awaited<ReturnType<typeof testServer>>, runId: string): Promise<string> {
  for (let tries = 0; tries < 200; tries += 1) {
    const { body } = await server.json<{ deferred: { deferredId: string; tool: string }[] }>(`/v1/runs/${runId}/deferred`)
    const first = body.deferred[0]
    if (first !== undefined) return first.deferredId
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error('no deferral opened')
}

describe('deferred tools over HTTP', () => {
  it('lists a waiting deferral, keeps it open on a bad result, completes the run on a good one, and holds to the first answer', async () => {
    const server = await testServer({ runtime: createRuntime({ workflows: [approval], runsDir: tempRunsDir() }) })
    const started = await server.json<{ runId: string }>('/v1/workflows/approval/runs', { method: 'POST', body: JSON.stringify({ input: null }) })
    expect(started.status).toBe(202)
    const runId = started.body.runId
    const id = await waitForDeferral(server, runId)
    const bad = await server.json<{ error: { code: string; issues: string[] } }>(`/v1/runs/${runId}/deferred/${id}/resolve`, { method: 'POST', body: JSON.stringify({ result: { approved: 'yes' } }) })
    expect(bad.status).toBe(400)
    expect(bad.body.error.issues.join(' ')).toMatch(/approved/)
    expect((await server.json<{ deferred: unknown[] }>(`/v1/runs/${runId}/deferred`)).body.deferred).toHaveLength(1)
    const good = await server.json(`/v1/runs/${runId}/deferred/${id}/resolve`, { method: 'POST', body: JSON.stringify({ result: { approved: true } }) })
    expect(good).toMatchObject({ status: 200, body: { status: 'accepted' } })
    const result = await server.json<{ disposition: string; result: unknown }>(`/v1/runs/${runId}/result?wait=10`)
    expect(result.body).toMatchObject({ disposition: 'completed', result: { ok: true, approval: { approved: true } } })
    const again = await server.json(`/v1/runs/${runId}/deferred/${id}/resolve`, { method: 'POST', body: JSON.stringify({ result: { approved: true } }) })
    expect(again.status).toBe(200)
    const different = await server.json<{ error: { code: string } }>(`/v1/runs/${runId}/deferred/${id}/resolve`, { method: 'POST', body: JSON.stringify({ result: { approved: false } }) })
    expect(different).toMatchObject({ status: 409, body: { error: { code: 'already_resolved' } } })
    const unknown = await server.json(`/v1/runs/${runId}/deferred/nope-a1/reject`, { method: 'POST', body: JSON.stringify({ error: 'no' }) })
    expect(unknown.status).toBe(404)
  })

  it('reports a run waiting on a deferral as waiting, with the deferral, live and as stored, and running again once answered', async () => {
    const runsDir = tempRunsDir()
    const server = await testServer({ runtime: createRuntime({ workflows: [approval], runsDir }) })
    const started = await server.json<{ runId: string }>('/v1/workflows/approval/runs', { method: 'POST', body: JSON.stringify({ input: null }) })
    const runId = started.body.runId
    const id = await waitForDeferral(server, runId)
    const live = await server.json<{ status: string; live: boolean; deferred: unknown[]; executions: { status: string }[] }>(`/v1/runs/${runId}`)
    expect(live.body).toMatchObject({ status: 'waiting', live: true, deferred: [{ deferredId: id, tool: 'approve', args: { amount: 42 }, expiresAt: null, executionId: runId }] })
    expect(live.body.executions).toEqual([expect.objectContaining({ status: 'waiting' })])
    const listed = await server.json<{ runs: { runId: string; status: string }[] }>('/v1/runs?status=waiting')
    expect(listed.body.runs.map((run) => run.runId)).toEqual([runId])
    // Another server on the same runs directory sees the stored run waiting too.
    const reader = await testServer({ runtime: createRuntime({ workflows: [approval], runsDir }) })
    expect((await reader.json(`/v1/runs/${runId}`)).body).toMatchObject({ status: 'waiting', live: false, deferred: [{ deferredId: id }] })
    await server.json(`/v1/runs/${runId}/deferred/${id}/resolve`, { method: 'POST', body: JSON.stringify({ result: { approved: true } }) })
    await server.json(`/v1/runs/${runId}/result?wait=10`)
    expect((await server.json(`/v1/runs/${runId}`)).body).toMatchObject({ status: 'completed', deferred: [] })
  })

  it('suspends a waiting run when the server stops, and the next server on the store resumes it under the same deferral id', async () => {
    const runsDir = tempRunsDir()
    const drained: unknown[] = []
    const first = await testServer({ runtime: createRuntime({ workflows: [approval], runsDir }), onDrained: (report) => drained.push(report) })
    const started = await first.json<{ runId: string }>('/v1/workflows/approval/runs', { method: 'POST', body: JSON.stringify({ input: null }) })
    const runId = started.body.runId
    const id = await waitForDeferral(first, runId)
    await first.close()
    expect(drained).toEqual([{ suspended: [runId], cancelled: [], ended: [] }])
    // Suspended, not ended: no run_end, and the deferral is still open under its id.
    const runtime = createRuntime({ workflows: [approval], runsDir })
    const stored = await runtime.get(runId)
    expect(stored.latest.view.runEnd).toBeUndefined()
    expect((await runtime.pendingDeferrals(runId)).map((pending) => pending.deferredId)).toEqual([id])

    const resumed: string[] = []
    const second = await testServer({ runtime, onResumed: (report) => resumed.push(...report.resumed.map((handle) => handle.runId)) })
    for (let tries = 0; tries < 200 && resumed.length === 0; tries += 1) await new Promise((resolve) => setTimeout(resolve, 10))
    expect(resumed).toEqual([runId])
    expect((await second.json(`/v1/runs/${runId}`)).body).toMatchObject({ status: 'waiting', live: true, deferred: [{ deferredId: id }] })
    const answered = await second.json(`/v1/runs/${runId}/deferred/${id}/resolve`, { method: 'POST', body: JSON.stringify({ result: { approved: true } }) })
    expect(answered.status).toBe(200)
    const result = await second.json<{ disposition: string; result: unknown }>(`/v1/runs/${runId}/result?wait=10`)
    expect(result.body).toMatchObject({ disposition: 'completed', result: { ok: true, approval: { approved: true } } })
  })

  it('needs the deferred:resolve scope', async () => {
    const key = 'read-only-key-0123456789'
    const server = await testServer({ runtime: createRuntime({ workflows: [approval], runsDir: tempRunsDir() }), apiKeys: [`${key}:runs:read+runs:start`] as never })
    const denied = await server.json(`/v1/runs/some-run/deferred/x-a1/resolve`, { method: 'POST', body: JSON.stringify({ result: {} }), key })
    expect(denied.status).toBe(403)
  })
})
