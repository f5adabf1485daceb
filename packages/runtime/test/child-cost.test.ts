import { createPriceTable, parsePriceFile } from '@locus/cost'
import { createSqliteOutcomeStore } from '@locus/partial/sqlite'
import { type AgentHost, createRuntime, defineWorkflow, readStoredRun } from '@locus/runtime'
import { ARTIFACT_KEYS, createMemoryRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'

// Dollars per million tokens: every request below (1,000 in, 100 out on "small") costs 0.001 + 0.0004.
const prices = createPriceTable({ prices: parsePriceFile({ models: { small: { input: '1', output: '4' } } }) })

/** Every agent session answers after one priced request. */
function pricedHost(): AgentHost {
  return {
    name: 'priced',
    openSession: (request) => ({
      prompt: async () => ({
        text: `answer for ${request.agent}`,
        stopReason: 'end',
        llmAttempts: [{ model: 'small', turn: 1, step: 1, attempt: 1, maxAttempts: 1, outcome: 'succeeded', durationMs: 1, streamed: false, usage: { inputTokens: 1_000, outputTokens: 100 } }],
      }),
      transcript: () => [],
    }),
  }
}

describe('a child run’s spend in its parent’s cost', () => {
  it('adds every child attempt into the run’s total, a retried child attempt as retry overhead, on every figure the run reports', async () => {
    const store = createMemoryRunStore()
    const metrics = createSqliteOutcomeStore({ path: ':memory:' })
    await metrics.migrate()
    let childRuns = 0
    // The child asks its agent, and its first run fails after paying for it: the spawn retries it.
    const child = defineWorkflow({
      name: 'child',
      run: async ({ agent }) => {
        childRuns += 1
        const answer = (await agent('research')).answer
        if (childRuns === 1) throw new Error('the first child run gives up')
        return { ok: true, answer }
      },
    })
    const parent = defineWorkflow({
      name: 'parent',
      run: async ({ agent, spawn }) => {
        const own = (await agent('plan')).answer
        const found = await spawn(child, null, { retry: { timeout_secs: null, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 } })
        return { ok: true, own, found }
      },
    })
    const runtime = createRuntime({ workflows: [parent, child], store, host: pricedHost(), defaults: { prices, metrics } })
    const handle = await runtime.start(parent)
    const done = await handle.done
    expect([done.disposition, JSON.stringify(done.error ?? null)]).toEqual(['completed', 'null'])

    // Parent 0.0014, child attempt 1 0.0014 (thrown away), child attempt 2 0.0014.
    const expected = { usd: '0.004200', retryOverheadUsd: '0.001400', unpricedRequests: 0, table: prices.version }
    expect(done.cost).toEqual(expected)
    const stored = await readStoredRun(store, handle.runId)
    expect(stored.view.cost).toEqual(expected)
    expect(stored.summary.cost).toEqual(expected)
    // Each child execution's own figure, and the spawn's, are the child's alone.
    expect(stored.children.map((execution) => execution.view.cost?.usd)).toEqual(['0.001400', '0.001400'])
    expect(stored.view.children().map((call) => call.cost)).toEqual([{ usd: '0.002800', retryOverheadUsd: '0.001400', unpricedRequests: 0 }])

    const readme = await store.readArtifact({ runId: handle.runId, executionId: handle.runId }, ARTIFACT_KEYS.outputsReadme)
    expect(readme).toContain('- LLM requests: $0.004200')
    expect(readme).toContain('- Retry overhead: $0.001400')
    expect(readme).toContain('- Child runs: $0.002800')

    const report = await metrics.costReport()
    expect(report).toMatchObject({ usd: '0.004200', retryOverheadUsd: '0.001400' })
    await metrics.close()
  })
})
