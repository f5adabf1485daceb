// Money budgets over HTTP (issue #32): POST /v1/workflows/{name}/runs takes budgets.maxCostUsd and allowUnpriced.
import { readdirSync } from 'node:fs'
import { createPriceTable, parsePriceFile } from '@locus/cost'
import { createRuntime, createScriptedHost, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { tempRunsDir, testServer } from './helpers.js'

// $2 in and $8 out per million tokens: each call reserves about $0.008 (1,000 output tokens) and spends $0.00722.
const prices = createPriceTable({ prices: parsePriceFile({ models: { scripted: { input: '2', output: '8' } } }) })

const fanOut = defineWorkflow({
  name: 'fan-out',
  run: async ({ agent, parallel }) => {
    const thunks = ['a', 'b', 'c', 'd'].map((name) => () => agent(`look up ${name}`, { label: `lookup-${name}`, budgets: { maxOutputTokens: 1000 }, criticality: 'enriching' }))
    const answers = await parallel(thunks, { concurrency: 1 })
    return { ok: true, answers: answers.map((answer) => answer.answer) }
  },
})
const fineTuned = defineWorkflow({ name: 'fine-tuned', agents: { writer: { model: 'my-fine-tune' } }, run: async ({ agent }) => (await agent('x', { agent: 'writer' })).answer })

function pricedServer() {
  const runsDir = tempRunsDir()
  const host = createScriptedHost({ rules: [{ steps: [{ text: 'found', usage: { inputTokens: 10, outputTokens: 900 } }] }] })
  const runtime = createRuntime({ workflows: [fanOut, fineTuned], runsDir, host, defaults: { prices } })
  return { runsDir, host, start: () => testServer({ runtime }) }
}

interface ResultBody {
  answerOutcome?: string
  gaps?: { tool: string; criticality: string; reason?: string }[]
  caveats?: string[]
}

describe('a money budget given over HTTP', () => {
  it('runs what the budget affords and answers partial, the refused calls as gaps of GET /v1/runs/{id}/result', async () => {
    const { host, start } = pricedServer()
    const server = await start()
    const started = await server.json<{ runId: string }>('/v1/workflows/fan-out/runs', { method: 'POST', body: JSON.stringify({ budgets: { maxCostUsd: '0.009' } }) })
    expect(started.status).toBe(202)
    const { status, body } = await server.json<ResultBody>(`/v1/runs/${started.body.runId}/result?wait=30`)
    expect(status).toBe(200)
    expect(host.calls).toHaveLength(1)
    expect(body.answerOutcome).toBe('partial')
    const reason = "not run: the run's cost budget of $0.009 was spent"
    expect(body.gaps).toEqual(['b', 'c', 'd'].map((name) => ({ tool: `lookup-${name}`, criticality: 'enriching', reason })))
    expect(body.caveats?.some((caveat) => caveat.startsWith('Could not afford 3 calls'))).toBe(true)
    const run = await server.json<{ cost: { usd: string } | null }>(`/v1/runs/${started.body.runId}`)
    expect(run.body.cost?.usd).toBe('0.007220')
  })

  it('refuses a budget that is not a positive decimal with 400 naming the field, and writes nothing', async () => {
    const { runsDir, host, start } = pricedServer()
    const server = await start()
    for (const maxCostUsd of ['0', '-1', 'two dollars', -2.5, 0, true, '']) {
      const refused = await server.json<{ error: { code: string; message: string; issues?: string[] } }>('/v1/workflows/fan-out/runs', {
        method: 'POST',
        body: JSON.stringify({ budgets: { maxCostUsd } }),
      })
      expect(refused.status).toBe(400)
      expect(refused.body.error.code).toBe('invalid_request')
      expect(refused.body.error.issues?.[0]).toMatch(/^body\.budgets\.maxCostUsd: /)
    }
    expect(host.calls).toHaveLength(0)
    expect(readdirSync(runsDir).filter((name) => !name.startsWith('.') && name !== 'outcomes.sqlite')).toEqual([])
  })

  it('refuses a money budget over a model with no price unless allowUnpriced, and writes nothing', async () => {
    const { runsDir, start } = pricedServer()
    const server = await start()
    const refused = await server.json<{ error: { code: string; message: string } }>('/v1/workflows/fine-tuned/runs', { method: 'POST', body: JSON.stringify({ budgets: { maxCostUsd: '1' } }) })
    expect(refused.status).toBe(400)
    expect(refused.body.error.message).toMatch(/model "my-fine-tune" has no price/)
    expect(readdirSync(runsDir).filter((name) => !name.startsWith('.') && name !== 'outcomes.sqlite')).toEqual([])
    const allowed = await server.json<{ runId: string }>('/v1/workflows/fine-tuned/runs', { method: 'POST', body: JSON.stringify({ budgets: { maxCostUsd: '1' }, allowUnpriced: true }) })
    expect(allowed.status).toBe(202)
    const { body } = await server.json<{ disposition?: string }>(`/v1/runs/${allowed.body.runId}/result?wait=30`)
    expect(body.disposition).toBe('completed')
  })
})
