// The inspector's cost figures and its /report page (issue #32): server-rendered SVG charts, each with a table of the same figures.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createPriceTable, parsePriceFile } from '@locus/cost'
import { type FullOutcomeReport, type OutcomeStore, readOutcomeReport } from '@locus/partial'
import { createPostgresOutcomeStore } from '@locus/partial/postgres'
import { createSqliteOutcomeStore } from '@locus/partial/sqlite'
import { type AgentHost, createRuntime, createScriptedHost, defineWorkflow, readStoredRun } from '@locus/runtime'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { createServer } from '../src/index.js'
import { tempRunsDir } from './helpers.js'
import { parse, rowsOf, textOf } from './html-doc.js'

const databaseUrl = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
const prices = createPriceTable({ prices: parsePriceFile({ models: { scripted: { input: '3', output: '15' } } }) })

const answer = defineWorkflow({
  name: 'answer',
  run: async ({ agent, input }) => {
    await agent('draft')
    const summary = await agent('summarise')
    const kind = (input as { kind: string }).kind
    const gap = { tool: 'get_payment_history', criticality: kind === 'cannot' ? 'required' : 'enriching', reason: 'timed out' }
    if (kind === 'complete') return { ok: true, answer: summary.answer }
    return { ok: false, text: 'x', found: kind !== 'cannot', partial: kind !== 'cannot', caveats: ['Could not check the payment history.'], gaps: [gap], gathered: [] }
  },
})

const cleanups: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})

interface StoreCase {
  readonly name: string
  open(): Promise<OutcomeStore>
}

const cases: StoreCase[] = [
  {
    name: 'SQLite',
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'locus-report-page-'))
      const store = createSqliteOutcomeStore({ path: join(dir, 'outcomes.sqlite') })
      cleanups.push(async () => {
        await store.close()
        rmSync(dir, { recursive: true, force: true })
      })
      await store.migrate()
      return store
    },
  },
]
if (databaseUrl !== undefined) {
  cases.push({
    name: 'PostgreSQL',
    async open() {
      const schema = `locus_report_page_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
      const store = createPostgresOutcomeStore({ connectionString: databaseUrl, schema })
      cleanups.push(async () => {
        await store.close()
        const client = new pg.Client({ connectionString: databaseUrl })
        await client.connect()
        await client.query(`drop schema if exists "${schema}" cascade`)
        await client.end()
      })
      await store.migrate()
      return store
    },
  })
}

/** Priced runs of three answer outcomes, recorded in `metrics`; each run's cost as its RunView sums it. */
async function pricedRuns(metrics: OutcomeStore) {
  const runtime = createRuntime({
    workflows: [answer],
    runsDir: tempRunsDir(),
    host: createScriptedHost({ rules: [{ steps: [{ text: 'a draft', usage: { inputTokens: 1000, outputTokens: 40 } }, { text: 'a summary', usage: { inputTokens: 1200, outputTokens: 250 } }] }] }),
    defaults: { prices, metrics },
  })
  const costs = new Map<string, string>()
  for (const kind of ['complete', 'partial', 'cannot', 'complete']) {
    const handle = await runtime.start('answer', { input: { kind } })
    await handle.done
    costs.set(handle.runId, (await readStoredRun(runtime.store, handle.runId)).view.cost?.usd ?? 'unpriced')
  }
  return { runtime, costs }
}

describe.each(cases)('the inspector’s /report page on $name', (storeCase) => {
  it('draws four SVG charts, each described by a table holding exactly the report’s figures, under the inspector’s CSP', async () => {
    const store = await storeCase.open()
    const { runtime, costs } = await pricedRuns(store)
    const app = createServer({ runtime, outcomes: store })
    const response = await app.request('/report?days=7')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-security-policy')).toContain("default-src 'self'")
    const document = parse(await response.text())
    expect(document.querySelectorAll('script')).toHaveLength(0)
    const charts = [...document.querySelectorAll('svg[role="img"]')]
    expect(charts.map((chart) => chart.getAttribute('data-testid'))).toEqual(['mix-svg', 'gaps-svg', 'dollars-svg', 'overhead-svg'])
    for (const chart of charts) {
      expect(document.querySelector(`#${chart.getAttribute('aria-describedby') ?? 'none'}`)).not.toBeNull()
      expect(chart.querySelectorAll('rect').length).toBeGreaterThan(0)
    }
    const report: FullOutcomeReport = await readOutcomeReport(store, new Date(Date.now() - 7 * 24 * 60 * 60 * 1000))
    expect(rowsOf(document, '[data-testid="dollars-table"]')).toEqual(report.cost.outcomes.map((row) => [row.outcome, String(row.runs), String(row.pricedRuns), `$${row.usd}`, `$${row.retryOverheadUsd}`]))
    // The total is the runs' own RunView costs, added exactly.
    const sum = [...costs.values()].reduce((total, usd) => total + BigInt(usd.replace('.', '')), 0n).toString().padStart(7, '0')
    expect(textOf(document.querySelector('[data-testid="total-usd"]'))).toBe(`$${sum.slice(0, -6)}.${sum.slice(-6)}`)
    expect(rowsOf(document, '[data-testid="gaps-table"]')).toEqual([['get_payment_history', '2', '1']])
    expect(rowsOf(document, '[data-testid="lost-table"]')).toEqual([['get_payment_history', '1', `$${report.cost.tools[0]?.usd ?? ''}`]])
    const day = report.days[0]
    expect(rowsOf(document, '[data-testid="mix-table"]')).toEqual([[day?.day ?? '', '2', '1', '1', '0']])
    expect(rowsOf(document, '[data-testid="overhead-table"]')).toEqual([[day?.day ?? '', `$${report.cost.usd}`, `$${report.cost.retryOverheadUsd}`]])
  })
})

describe('the inspector’s cost figures', () => {
  it('refuses a report window that is not a whole number of days, naming the parameter', async () => {
    const store = await cases[0]?.open()
    const app = createServer({ runtime: createRuntime({ workflows: [answer], runsDir: tempRunsDir() }), outcomes: store })
    const response = await app.request('/report?days=1e3')
    expect(response.status).toBe(400)
    expect(textOf(parse(await response.text()).querySelector('[role="alert"]'))).toMatch(/days must be a whole number of days from 1 to 3650/)
  })

  it('says how to give the server an outcome store when it has none', async () => {
    const app = createServer({ runtime: createRuntime({ workflows: [answer], runsDir: tempRunsDir() }) })
    const response = await app.request('/report')
    expect(response.status).toBe(200)
    expect(await response.text()).toContain('takes it as the <code>outcomes</code> option')
  })

  it('shows a priced run’s cost on its page: the total and retry overhead, each call, attempt and request, as the journal has them', async () => {
    // Each turn's first request fails and its second answers: the failed one is retry overhead.
    const request = (attempt: number, outcome: 'succeeded' | 'failed') => ({ model: 'scripted', turn: 1, step: 1, attempt, maxAttempts: 2, outcome, durationMs: 1, streamed: false, usage: { inputTokens: 1000 * attempt, outputTokens: 40 } })
    const host: AgentHost = {
      name: 'reporting',
      openSession: () => ({ prompt: async () => ({ text: 'an answer', stopReason: 'end', llmAttempts: [request(1, 'failed'), request(2, 'succeeded')] }), transcript: () => [] }),
    }
    const runtime = createRuntime({ workflows: [answer], runsDir: tempRunsDir(), host, defaults: { prices } })
    const handle = await runtime.start('answer', { input: { kind: 'complete' } })
    await handle.done
    const stored = await readStoredRun(runtime.store, handle.runId, { keep: 'all' })
    const app = createServer({ runtime })
    const document = parse(await (await app.request(`/runs/${handle.runId}`)).text())
    // 2 x (1,000 + 2,000 in at $3 and 80 out at $15 per million); the failed requests' 2 x $0.0036 are overhead.
    expect(stored.view.cost).toMatchObject({ usd: '0.020400', retryOverheadUsd: '0.007200' })
    expect(textOf(document.querySelector('[data-testid="cost"] [data-usd]'))).toBe('0.020400')
    expect(textOf(document.querySelector('[data-testid="cost"] [data-overhead]'))).toBe('0.007200')
    const ends = stored.view.calls().flatMap((call) => (call.kind === 'agent' ? call.attempts.map((attempt) => `$${attempt.end?.cost?.usd ?? ''}`) : []))
    expect(ends).toEqual(['$0.010200', '$0.010200'])
    expect([...document.querySelectorAll('[data-testid="attempt-cost"]')].map((element) => textOf(element))).toEqual(ends)
    expect([...document.querySelectorAll('[data-testid="call-cost"]')].map((element) => textOf(element))).toEqual(ends)
    expect([...document.querySelectorAll('[data-testid="request-cost"]')].map((element) => textOf(element))).toEqual(['$0.003600', '$0.006600', '$0.003600', '$0.006600'])
  })
})
