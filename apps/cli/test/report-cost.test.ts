// `locus report` in dollars (issue #32): per answer outcome, lost to each tool's gaps, retry overhead; on SQLite and PostgreSQL.
import { describe, expect, it } from 'vitest'
import { adminQuery, runLocus } from './helpers.js'
import { type PricedRun, pricedProject, recordPricedRuns, sumUsd } from './report-fixtures.js'

const databaseUrl = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL

interface ReportJson {
  store: string
  outcomes: { complete: number; partial: number; cannotAnswer: number; failed: number }
  cost: {
    outcomes: { outcome: string; runs: number; pricedRuns: number; usd: string; retryOverheadUsd: string }[]
    tools: { tool: string; runs: number; usd: string }[]
    usd: string
    retryOverheadUsd: string
    unattributedLostUsd: string
    unpricedRuns: number
  }
  days: { day: string; complete: number; usd: string; retryOverheadUsd: string }[]
}

/** The report's dollars must be the runs' own (`locus show`'s RunView.cost), added exactly. */
function expectDollarsOfRuns(report: ReportJson, runs: readonly PricedRun[]): void {
  const of = (outcome: string) => runs.filter((run) => run.outcome === outcome)
  expect(report.cost.outcomes).toEqual(
    ['complete', 'partial', 'cannot_answer', 'failed'].map((outcome) => ({
      outcome,
      runs: of(outcome).length,
      pricedRuns: of(outcome).length,
      usd: sumUsd(of(outcome).map((run) => run.cost.usd)),
      retryOverheadUsd: sumUsd(of(outcome).map((run) => run.cost.retryOverheadUsd)),
      runsWithUnpricedRequests: 0,
    })),
  )
  expect(report.cost.usd).toBe(sumUsd(runs.map((run) => run.cost.usd)))
  expect(report.cost.retryOverheadUsd).toBe(sumUsd(runs.map((run) => run.cost.retryOverheadUsd)))
  // The one cannot_answer run was stopped by get_payment_history's required gap alone.
  expect(report.cost.tools).toEqual([{ tool: 'get_payment_history', runs: 1, usd: sumUsd(of('cannot_answer').map((run) => run.cost.usd)) }])
  expect(report.cost.unattributedLostUsd).toBe('0.000000')
  expect(report.days.reduce((sum, day) => sum + day.complete, 0)).toBe(2)
  expect(sumUsd(report.days.map((day) => day.usd))).toBe(report.cost.usd)
  expect(sumUsd(report.days.map((day) => day.retryOverheadUsd))).toBe(report.cost.retryOverheadUsd)
}

describe('locus report in dollars', () => {
  it('on SQLite: dollars per answer outcome, lost to each tool’s gaps, and retry overhead equal the runs’ own costs', async () => {
    const dir = await pricedProject()
    const runs = await recordPricedRuns(dir)
    expect(new Set(runs.map((run) => run.cost.usd)).size).toBeGreaterThan(1)
    const json = await runLocus(['report', '--runs-dir', 'runs', '--json'], { cwd: dir })
    expect(json.code).toBe(0)
    const report = JSON.parse(json.stdout) as ReportJson
    expect(report.store).toBe('sqlite')
    expectDollarsOfRuns(report, runs)

    const text = await runLocus(['report', '--runs-dir', 'runs'], { cwd: dir })
    expect(text.stdout).toContain('Cost per answer outcome\nOutcome ')
    expect(text.stdout).toMatch(new RegExp(`\\ntotal +5 +5 +\\$${report.cost.usd.replace('.', '\\.')} +\\$${report.cost.retryOverheadUsd.replace('.', '\\.')}\\n`))
    expect(text.stdout).toMatch(/\nget_payment_history +1 +\$0\.\d+\n/)
  })

  it('says how to record costs when no run in the window was priced', async () => {
    const dir = await pricedProject()
    await runLocus(['run', 'answer.mts', '--runs-dir', 'runs', '--input', '{"kind":"complete"}', '--quiet'], { cwd: dir })
    const text = await runLocus(['report', '--runs-dir', 'runs'], { cwd: dir })
    expect(text.stdout).toContain('Cost per answer outcome\nno priced run in this window; runs record their cost when priced (locus run --prices prices.json)')
    const report = JSON.parse((await runLocus(['report', '--runs-dir', 'runs', '--json'], { cwd: dir })).stdout) as ReportJson
    expect(report.cost).toMatchObject({ usd: '0.000000', unpricedRuns: 1 })
  })

  it.skipIf(databaseUrl === undefined)('on PostgreSQL (LOCUS_DATABASE_URL): the same figures, summed by the database (set LOCUS_TEST_PG_URL to run)', async () => {
    const database = `locus_report_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    await adminQuery(databaseUrl, `create database ${database}`)
    try {
      const url = new URL(databaseUrl ?? '')
      url.pathname = `/${database}`
      const env = { LOCUS_DATABASE_URL: url.toString() }
      const dir = await pricedProject()
      const runs = await recordPricedRuns(dir, env)
      const json = await runLocus(['report', '--runs-dir', 'runs', '--json'], { cwd: dir, env })
      const report = JSON.parse(json.stdout) as ReportJson
      expect(report.store).toBe('postgres')
      expectDollarsOfRuns(report, runs)
    } finally {
      await adminQuery(databaseUrl, `drop database if exists ${database} with (force)`)
    }
  })
})
