import { createPriceTable, parsePriceFile } from '@locus/cost'
import type { JournalLine } from '@locus/journal'
import { createSqliteOutcomeStore } from '@locus/partial/sqlite'
import { type AgentHost, createRuntime, createScriptedHost, defineWorkflow, readStoredRun, resumeRun } from '@locus/runtime'
import { createMemoryRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'

// Dollars per million tokens: a request of 1,000 in and 100 out on "small" costs 0.001 + 0.0004.
const prices = createPriceTable({ prices: parsePriceFile({ models: { small: { input: '1', output: '4' }, scripted: { input: '2', output: '8' } } }) })

async function linesOf(store: ReturnType<typeof createMemoryRunStore>, runId: string): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  for (const info of await store.listExecutions(runId)) for await (const line of store.readLines({ runId, executionId: info.executionId })) lines.push(line)
  return lines
}

/** A host whose first session fails after one priced request and whose second answers after two, one of them on a model with no price. */
function reportingHost(): AgentHost {
  let sessions = 0
  return {
    name: 'reporting',
    openSession(request) {
      sessions += 1
      const session = sessions
      const record = (step: number, model: string, outcome: 'succeeded' | 'failed') => ({
        model,
        turn: 1,
        step,
        attempt: 1,
        maxAttempts: 1,
        outcome,
        durationMs: 1,
        streamed: false,
        usage: { inputTokens: 1_000, outputTokens: 100 },
      })
      return {
        prompt: async () =>
          session === 1
            ? { text: '', stopReason: 'error', failureCause: 'host-turn-timeout', reason: 'the turn took too long', llmAttempts: [record(1, 'small', 'succeeded')] }
            : { text: `answer for ${request.agent}`, stopReason: 'end', llmAttempts: [record(1, 'small', 'succeeded'), record(2, 'my-fine-tune', 'succeeded')], usage: { inputTokens: 2_000, outputTokens: 200 } },
        transcript: () => [],
      }
    },
  }
}

describe('pricing a run', () => {
  it('journals each request’s cost and each attempt’s, records the table in run_start, and the run view adds them up with the retry overhead', async () => {
    const store = createMemoryRunStore()
    const workflow = defineWorkflow({ name: 'priced', run: async ({ agent }) => ({ ok: true, answer: (await agent('write', { attempts: 2 })).answer }) })
    const runtime = createRuntime({ workflows: [workflow], store, host: reportingHost(), defaults: { prices } })
    const handle = await runtime.start(workflow)
    const done = await handle.done
    const lines = await linesOf(store, handle.runId)
    expect([done.disposition, JSON.stringify(done.error ?? null)]).toEqual(['completed', 'null'])
    expect(lines.find((line) => line.type === 'run_start')).toMatchObject({ options: { priceTable: prices.version } })
    const requests = lines.filter((line) => line.type === 'llm_attempt').map((line) => line.cost)
    expect(requests).toEqual([
      { usd: '0.001400', table: prices.version },
      { usd: '0.001400', table: prices.version },
      { unpriced: true, table: prices.version, model: 'my-fine-tune' },
    ])
    const ends = lines.filter((line) => line.type === 'agent_end').map((line) => [line.status, line.cost])
    expect(ends).toEqual([
      ['failed', { usd: '0.001400', table: prices.version }],
      ['completed', { usd: '0.001400', table: prices.version, unpriced: 1 }],
    ])
    const stored = await readStoredRun(store, handle.runId)
    expect(stored.view.cost).toEqual({ usd: '0.002800', retryOverheadUsd: '0.001400', unpricedRequests: 1, table: prices.version })
  })

  it('prices the scripted host’s turns from its fixtures’ usage, under the model id scripted', async () => {
    const store = createMemoryRunStore()
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'done', usage: { inputTokens: 500, outputTokens: 50 } }] }] })
    const workflow = defineWorkflow({ name: 'scripted-cost', run: async ({ agent }) => ({ ok: true, answer: (await agent('go')).answer }) })
    const runtime = createRuntime({ workflows: [workflow], store, host, defaults: { prices } })
    const handle = await runtime.start(workflow)
    await handle.done
    const end = (await linesOf(store, handle.runId)).find((line) => line.type === 'agent_end')
    // 500 in at $2 and 50 out at $8 per million.
    expect(end?.cost).toEqual({ usd: '0.001400', table: prices.version })
  })

  it('writes no cost when the run is not priced', async () => {
    const store = createMemoryRunStore()
    const workflow = defineWorkflow({ name: 'unpriced', run: async ({ agent }) => ({ ok: true, answer: (await agent('write', { attempts: 2 })).answer }) })
    const handle = await createRuntime({ workflows: [workflow], store, host: reportingHost() }).start(workflow)
    await handle.done
    const lines = await linesOf(store, handle.runId)
    expect(lines.some((line) => (line.type === 'llm_attempt' || line.type === 'agent_end') && line.cost !== undefined)).toBe(false)
    expect((await readStoredRun(store, handle.runId)).view.cost).toBeUndefined()
  })

  it('refuses a prices option that is not a price table, naming it', async () => {
    const workflow = defineWorkflow({ name: 'bad', run: () => ({ ok: true }) })
    await expect(createRuntime({ workflows: [workflow], store: createMemoryRunStore(), defaults: { prices: { rates: 1 } as never } }).start(workflow)).rejects.toThrow(/prices must be a PriceTable/)
  })
})

describe('the cost in the outcome metrics', () => {
  it('records the run’s RunView cost when it ends, and after a resume the cost of every execution', async () => {
    const store = createMemoryRunStore()
    const metrics = createSqliteOutcomeStore({ path: ':memory:' })
    await metrics.migrate()
    let crash = true
    const host: AgentHost = {
      name: 'priced',
      openSession(request) {
        const llmAttempts = [{ model: 'small', turn: 1, step: 1, attempt: 1, maxAttempts: 1, outcome: 'succeeded' as const, durationMs: 1, streamed: false, usage: { inputTokens: 1_000, outputTokens: 100 } }]
        return { prompt: async () => ({ text: `answer ${request.agent}`, stopReason: 'end', llmAttempts }), transcript: () => [] }
      },
    }
    const workflow = defineWorkflow({
      name: 'crashes-once',
      run: async ({ agent }) => {
        await agent('a')
        await agent('b')
        if (crash) throw new Error('the process went away')
        return { ok: true, answer: (await agent('c')).answer }
      },
    })
    const handle = await createRuntime({ workflows: [workflow], store, host, defaults: { prices, metrics } }).start(workflow)
    expect((await handle.done).disposition).toBe('failed')
    const first = await metrics.costReport()
    expect(first.outcomes.find((row) => row.outcome === 'failed')).toMatchObject({ runs: 1, pricedRuns: 1, usd: (await readStoredRun(store, handle.runId)).view.cost?.usd })
    crash = false
    const result = await resumeRun(handle.runId, workflow, { store, host, prices, metrics })
    expect([result.disposition, JSON.stringify(result.error ?? null)]).toEqual(['completed', 'null'])
    const runCost = (await readStoredRun(store, handle.runId)).view.cost
    // a and b in the root, c in the resume (a and b replayed, at nothing): $0.0014 each.
    expect(runCost).toMatchObject({ usd: '0.004200', retryOverheadUsd: '0.000000' })
    expect(result.cost).toEqual(runCost)
    const report = await metrics.costReport()
    expect(report.outcomes.map((row) => [row.outcome, row.runs, row.usd])).toEqual([
      ['complete', 1, '0.004200'],
      ['partial', 0, '0.000000'],
      ['cannot_answer', 0, '0.000000'],
      ['failed', 0, '0.000000'],
    ])
    await metrics.close()
  })

  it('records a run none of whose requests had a price as unpriced, never $0, and a partly priced one with its count of unpriced requests', async () => {
    const metrics = createSqliteOutcomeStore({ path: ':memory:' })
    await metrics.migrate()
    const workflow = defineWorkflow({ name: 'priced', run: async ({ agent }) => ({ ok: true, answer: (await agent('write', { attempts: 2 })).answer }) })
    const onlyScripted = createPriceTable({ prices: parsePriceFile({ models: { scripted: { input: '2', output: '8' } } }) })
    await (await createRuntime({ workflows: [workflow], store: createMemoryRunStore(), host: reportingHost(), defaults: { prices: onlyScripted, metrics } }).start(workflow)).done
    expect(await metrics.costReport()).toMatchObject({ usd: '0.000000', unpricedRuns: 1 })
    await (await createRuntime({ workflows: [workflow], store: createMemoryRunStore(), host: reportingHost(), defaults: { prices, metrics } }).start(workflow)).done
    const report = await metrics.costReport()
    expect(report.outcomes[0]).toEqual({ outcome: 'complete', runs: 2, pricedRuns: 1, usd: '0.002800', retryOverheadUsd: '0.001400', runsWithUnpricedRequests: 1 })
    await metrics.close()
  })
})
