import type { JournalLine } from '@locus/journal'
import { createRuntime, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { parseApiKeys } from '../src/index.js'
import { tempRunsDir, testServer } from './helpers.js'

const waiter = defineWorkflow({
  name: 'waiter',
  signals: { approve: z.object({ approved: z.boolean() }) },
  queries: { received: (view) => view.signals().map((line) => line.payload) },
  run: async ({ waitForSignal }) => ({ ok: true, decision: await waitForSignal('approve') }),
})

describe('signals and queries over HTTP', () => {
  it('takes a declared signal (202), refuses an undeclared name (404) or a bad payload (400) writing nothing, and a finished run (409); queries answer from the journal', async () => {
    const runsDir = tempRunsDir()
    const server = await testServer({ runtime: createRuntime({ workflows: [waiter], runsDir }) })
    const started = await server.json<{ runId: string }>('/v1/workflows/waiter/runs', { method: 'POST', body: JSON.stringify({ input: null }) })
    const runId = started.body.runId
    const undeclared = await server.json<{ error: { code: string; message: string } }>(`/v1/runs/${runId}/signals/aprove`, { method: 'POST', body: JSON.stringify({ payload: {} }) })
    expect(undeclared.status).toBe(404)
    expect(undeclared.body.error.message).toContain('Declared: approve')
    const bad = await server.json<{ error: { code: string; issues: string[] } }>(`/v1/runs/${runId}/signals/approve`, { method: 'POST', body: JSON.stringify({ payload: { approved: 'yes' } }) })
    expect(bad.status).toBe(400)
    expect(bad.body.error.issues.join(' ')).toContain('payload.approved')
    expect((await server.json<{ result: unknown }>(`/v1/runs/${runId}/queries/received`)).body.result).toEqual([])
    const sent = await server.json(`/v1/runs/${runId}/signals/approve`, { method: 'POST', body: JSON.stringify({ payload: { approved: true } }) })
    expect(sent).toMatchObject({ status: 202, body: { runId, name: 'approve', signalSeq: 0, status: 'stored' } })
    const result = await server.json<{ disposition: string; result: unknown }>(`/v1/runs/${runId}/result?wait=10`)
    expect(result.body).toMatchObject({ disposition: 'completed', result: { ok: true, decision: { approved: true } } })
    // Another server on the same runs directory, holding no process of the run, answers the query from the store.
    const reader = await testServer({ runtime: createRuntime({ workflows: [waiter], runsDir }) })
    expect((await reader.json(`/v1/runs/${runId}/queries/received`)).body).toEqual({ runId, name: 'received', result: [{ approved: true }] })
    expect((await reader.json(`/v1/runs/${runId}/queries/nope`)).status).toBe(404)
    const late = await server.json<{ error: { code: string } }>(`/v1/runs/${runId}/signals/approve`, { method: 'POST', body: JSON.stringify({ payload: { approved: false } }) })
    expect(late).toMatchObject({ status: 409, body: { error: { code: 'run_terminal' } } })
  })

  it('signal-with-start: refuses an undeclared signal (404) or a bad payload (400) starting nothing, else journals it first so waitForSignal returns it at once', async () => {
    const runtime = createRuntime({ workflows: [waiter], runsDir: tempRunsDir() })
    const key = 'starter-key-0123456789abcdef'
    const server = await testServer({ runtime, apiKeys: [key] })
    const undeclared = await server.json<{ error: { code: string; message: string } }>('/v1/workflows/waiter/runs', {
      method: 'POST',
      body: JSON.stringify({ input: null, signal: { name: 'aprove', payload: { approved: true } } }),
      key,
    })
    expect(undeclared.status).toBe(404)
    expect(undeclared.body.error.message).toContain('Declared: approve')
    const bad = await server.json<{ error: { code: string; issues: string[] } }>('/v1/workflows/waiter/runs', {
      method: 'POST',
      body: JSON.stringify({ input: null, signal: { name: 'approve', payload: { approved: 'yes' } } }),
      key,
    })
    expect(bad.status).toBe(400)
    expect(bad.body.error.issues.join(' ')).toContain('body.signal.payload.approved')
    expect((await server.json<{ runs: unknown[] }>('/v1/runs', { key })).body.runs).toEqual([])

    const started = await server.json<{ runId: string }>('/v1/workflows/waiter/runs', {
      method: 'POST',
      body: JSON.stringify({ input: null, signal: { name: 'approve', payload: { approved: true } } }),
      key,
    })
    expect(started.status).toBe(202)
    const runId = started.body.runId
    const result = await server.json<{ disposition: string; result: unknown }>(`/v1/runs/${runId}/result?wait=10`, { key })
    expect(result.body).toMatchObject({ disposition: 'completed', result: { ok: true, decision: { approved: true } } })
    const lines: JournalLine[] = []
    for (const info of await runtime.store.listExecutions(runId)) for await (const line of runtime.store.readLines(info)) lines.push(line)
    expect(lines[1]).toMatchObject({ type: 'signal_received', name: 'approve', payload: { approved: true }, from: parseApiKeys([key])[0]?.id, via: 'start', signalSeq: 0 })
    expect(lines.some((line) => line.type === 'signal_wait_start')).toBe(false)
  })
})
