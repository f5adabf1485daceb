// POST /v1/deploy-check (issue #21): checkDeploy over the server's store,
// against the workflow code this server registered.
import { type Runtime, createRuntime, createScriptedHost, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { tempRunsDir, testServer } from './helpers.js'

/** Asks `first` about the ticket, then waits on a call that never answers until it is cancelled. */
const triage = (first: string) =>
  defineWorkflow({
    name: 'triage',
    input: z.object({ ticket: z.string() }),
    run: async ({ input, agent }) => {
      const answer = await agent(`${first} ${input.ticket}`, { label: 'first' })
      const next = await agent(`hang on ${answer.answer}`)
      return { ok: true, answer: next.answer }
    },
  })

const host = () => createScriptedHost({ rules: [{ match: { prompt: 'hang' }, steps: [{ hang: true }] }, { steps: [{ text: 'billing', usage: { inputTokens: 12, outputTokens: 3 } }] }] })

/** A runs dir holding one cancelled run of triage v1, part-way through. */
async function recordedRun(): Promise<{ runsDir: string; runId: string }> {
  const runsDir = tempRunsDir()
  const runtime: Runtime = createRuntime({ workflows: [triage('Triage')], host: host(), runsDir })
  const handle = await runtime.start('triage', { input: { ticket: 'T-7' } })
  for await (const line of handle.events()) {
    if (line.type === 'agent_start' && line.prompt.startsWith('hang')) break
  }
  handle.cancel('the deploy')
  await handle.done
  return { runsDir, runId: handle.runId }
}

const post = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body) })

describe('POST /v1/deploy-check', () => {
  it('answers ok for the code the run recorded, and names the run, call and field a reworded prompt changes', async () => {
    const { runsDir, runId } = await recordedRun()
    const same = await testServer({ runtime: createRuntime({ workflows: [triage('Triage')], host: host(), runsDir }) })
    const ok = await same.json<{ ok: boolean; runs: unknown[] }>('/v1/deploy-check', post({}))
    expect(ok).toMatchObject({ status: 200, body: { ok: true, runs: [{ runId, workflow: 'triage', standing: 'cancelled', continuable: true, verdict: 'identical' }] } })

    const changed = await testServer({ runtime: createRuntime({ workflows: [triage('Classify')], host: host(), runsDir }) })
    const report = await changed.json<{ ok: boolean; runs: unknown[] }>('/v1/deploy-check', post({ workflows: ['triage'], since: '1h', concurrency: 2 }))
    expect(report.status).toBe(200)
    expect(report.body).toMatchObject({
      ok: false,
      runs: [{ runId, verdict: 'diverged', divergence: { ordinal: '1', fields: ['prompt'] }, liveAgain: { agent: 2, tool: 0, remoteTool: 0, child: 0, inputTokens: 12, outputTokens: 3, usd: null, unpricedRequests: 0 } }],
    })
    // Both recorded calls would be asked again (the cancelled one too); only the first had answered with usage.
    // Checking wrote nothing to the run: it still has its one execution and stays cancelled.
    expect((await changed.json<{ status: string }>(`/v1/runs/${runId}`)).body.status).toBe('cancelled')
    expect(await changed.runtime.store.listExecutions(runId)).toHaveLength(1)
  })

  it('refuses a period that is not a duration, an unknown workflow and an unknown field, naming each', async () => {
    const server = await testServer()
    const badSince = await server.json<{ error: { code: string; issues: string[] } }>('/v1/deploy-check', post({ since: '10' }))
    expect(badSince.status).toBe(400)
    expect(badSince.body.error.code).toBe('invalid_request')
    expect(badSince.body.error.issues.join('\n')).toMatch(/since.*duration/)
    const unknown = await server.json<{ error: { code: string; message: string } }>('/v1/deploy-check', post({ workflows: ['echo', 'nope'] }))
    expect(unknown).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } })
    expect(unknown.body.error.message).toContain('"nope"')
    expect(unknown.body.error.message).toContain('GET /v1/workflows')
    const extra = await server.json<{ error: { issues: string[] } }>('/v1/deploy-check', post({ everything: true }))
    expect(extra.status).toBe(400)
    expect(extra.body.error.issues.join('\n')).toContain('everything')
    const zero = await server.json('/v1/deploy-check', post({ concurrency: 0 }))
    expect(zero.status).toBe(400)
  })
})
