// Money in the outcome metrics (issue #32): each run's cost and retry overhead, summed exactly per answer outcome, per tool's blocking gaps and per day.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import fc from 'fast-check'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { dropSchema, failInCiWithoutPostgres, postgresUrl, uniqueSchema } from '../test/postgres.js'
import { ANSWER_OUTCOMES, type AnswerOutcome } from './answer-outcome.js'
import { formatCostReport } from './format-report.js'
import type { OutcomeStore, RunRecordInput } from './outcome-store.js'
import { PartialInputError } from './partial-error.js'
import { createPostgresOutcomeStore } from './postgres-outcome-store.js'
import { createSqliteOutcomeStore } from './sqlite-outcome-store.js'

failInCiWithoutPostgres()

const NOW = new Date('2026-12-05T12:00:00.000Z')
const clock = () => NOW
const daysAgo = (days: number) => new Date(NOW.getTime() - days * 24 * 60 * 60 * 1000)

interface StoreCase {
  readonly name: 'sqlite' | 'postgres'
  /** A fresh, unmigrated store in its own file or schema. */
  open(): Promise<OutcomeStore>
  /** Runs SQL on the database of the store opened last, as an older version of the package would have. */
  exec(sql: string): Promise<void>
}

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const sqliteCase: StoreCase = (() => {
  let lastPath = ''
  return {
    name: 'sqlite',
    async open() {
      const directory = await mkdtemp(join(tmpdir(), 'locus-cost-'))
      lastPath = join(directory, 'outcomes.sqlite')
      const store = createSqliteOutcomeStore({ path: lastPath, clock })
      cleanups.push(async () => {
        await store.close()
        await rm(directory, { recursive: true, force: true })
      })
      return store
    },
    exec(sql) {
      const database = new Database(lastPath)
      try {
        database.exec(sql)
      } finally {
        database.close()
      }
      return Promise.resolve()
    },
  }
})()

const postgresCase = (url: string): StoreCase => {
  let lastSchema = ''
  return {
    name: 'postgres',
    async open() {
      lastSchema = uniqueSchema('cost')
      const schema = lastSchema
      const store = createPostgresOutcomeStore({ connectionString: url, schema, clock })
      cleanups.push(async () => {
        await store.close()
        await dropSchema(url, schema)
      })
      return store
    },
    async exec(sql) {
      const client = new pg.Client({ connectionString: url, options: `-c search_path=${lastSchema}` })
      await client.connect()
      try {
        await client.query(`create schema if not exists "${lastSchema}"`)
        await client.query(sql)
      } finally {
        await client.end()
      }
    },
  }
}

const cases: StoreCase[] = [sqliteCase]
if (postgresUrl !== undefined) cases.push(postgresCase(postgresUrl))

/** `units` of 10^-places dollars as the decimal string a journal would hold. */
const usdOf = (units: bigint, places: number): string => {
  const digits = units.toString().padStart(places + 1, '0')
  return `${digits.slice(0, -places)}.${digits.slice(-places)}`
}
/** A sum in nano-dollars as the report writes it: six places at least, trailing zeros past them dropped. */
const canonical = (nanos: bigint): string => {
  const digits = nanos.toString().padStart(10, '0')
  const fraction = digits.slice(-9).replace(/0+$/, '').padEnd(6, '0')
  return `${digits.slice(0, -9)}.${fraction}`
}

// The schema version 1 wrote, in each dialect: a database from before costs were recorded.
const V1_SQL = {
  sqlite: `create table schema_migrations (version integer primary key, name text not null, applied_at integer not null);
    insert into schema_migrations values (1, 'runs and run_gaps', 0);
    create table runs (run_id text primary key, outcome text not null, correct integer, started_at integer not null, workflow text, disposition text);
    create table run_gaps (id integer primary key, run_id text not null, step integer, tool text not null, criticality text not null, reason text not null, created_at integer not null);
    insert into runs values ('old-run', 'partial', 1, ${daysAgo(2).getTime()}, 'w', 'completed');`,
  postgres: `create table schema_migrations (version integer primary key, name text not null, applied_at timestamptz not null default now());
    insert into schema_migrations (version, name) values (1, 'runs and run_gaps');
    create table runs (run_id text primary key, outcome text not null, correct boolean, started_at timestamptz not null, workflow text, disposition text);
    create table run_gaps (id bigserial primary key, run_id text not null, step integer, tool text not null, criticality text not null, reason text not null, created_at timestamptz not null);
    insert into runs values ('old-run', 'partial', true, '${daysAgo(2).toISOString()}', 'w', 'completed');`,
}

describe.each(cases)('costs in the outcome store on $name', (storeCase) => {
  it('migrates a database written before costs, keeping its runs readable and counting them as unpriced', async () => {
    const store = await storeCase.open()
    await storeCase.exec(V1_SQL[storeCase.name])
    expect(await store.migrate()).toEqual({ applied: [2], version: 2 })
    expect(await store.outcomeReport()).toMatchObject({ partial: 1, total: 1, correctPartial: 1 })
    const report = await store.costReport()
    expect(report.unpricedRuns).toBe(1)
    expect(report.usd).toBe('0.000000')
    expect(report.outcomes.find((row) => row.outcome === 'partial')).toEqual({ outcome: 'partial', runs: 1, pricedRuns: 0, usd: '0.000000', retryOverheadUsd: '0.000000', runsWithUnpricedRequests: 0 })
    // The old row gains a cost when the run is recorded again with one.
    await store.recordRun({ runId: 'old-run', outcome: 'partial', startedAt: daysAgo(2), costUsd: '0.5', retryOverheadUsd: '0.25' })
    expect(await store.costReport()).toMatchObject({ usd: '0.500000', retryOverheadUsd: '0.250000', unpricedRuns: 0 })
  })

  it('sums every run’s cost and retry overhead per answer outcome and per day exactly, whatever the places', async () => {
    const store = await storeCase.open()
    await store.migrate()
    const run = fc.record({
      outcome: fc.constantFrom(...ANSWER_OUTCOMES),
      priced: fc.boolean(),
      usd: fc.bigInt({ min: 0n, max: 10n ** 12n }),
      overheadShare: fc.integer({ min: 0, max: 100 }),
      places: fc.integer({ min: 6, max: 9 }),
      day: fc.integer({ min: 0, max: 3 }),
    })
    let batch = 0
    await fc.assert(
      fc.asyncProperty(fc.array(run, { minLength: 1, maxLength: 40 }), async (runs) => {
        batch += 1
        const records: RunRecordInput[] = runs.map((entry, index) => {
          const scale = 10n ** BigInt(entry.places)
          const usd = (entry.usd * scale) / 10n ** 9n
          const overhead = (usd * BigInt(entry.overheadShare)) / 100n
          return {
            runId: `b${batch}-r${index}`,
            outcome: entry.outcome,
            startedAt: new Date(daysAgo(1 + entry.day).getTime() + index),
            ...(entry.priced ? { costUsd: usdOf(usd, entry.places), retryOverheadUsd: usdOf(overhead, entry.places) } : {}),
          }
        })
        const since = new Date(NOW.getTime() - 10 * 24 * 60 * 60 * 1000)
        await store.recordRuns(records)
        const nanos = (text: string | null | undefined): bigint => {
          if (text === null || text === undefined) return 0n
          const [whole = '0', fraction = ''] = text.split('.')
          return BigInt(whole + fraction.padEnd(9, '0'))
        }
        const expected = new Map<AnswerOutcome, { runs: number; priced: number; usd: bigint; overhead: bigint }>()
        for (const outcome of ANSWER_OUTCOMES) expected.set(outcome, { runs: 0, priced: 0, usd: 0n, overhead: 0n })
        const perDay = new Map<string, { usd: bigint; overhead: bigint; runs: number }>()
        for (const record of records) {
          const row = expected.get(record.outcome)
          if (row === undefined) continue
          row.runs += 1
          if (record.costUsd !== undefined) row.priced += 1
          row.usd += nanos(record.costUsd)
          row.overhead += nanos(record.retryOverheadUsd)
          const day = (record.startedAt as Date).toISOString().slice(0, 10)
          const totals = perDay.get(day) ?? { usd: 0n, overhead: 0n, runs: 0 }
          totals.usd += nanos(record.costUsd)
          totals.overhead += nanos(record.retryOverheadUsd)
          totals.runs += 1
          perDay.set(day, totals)
        }
        const report = await store.costReport({ since })
        expect(report.outcomes.map((row) => [row.outcome, row.runs, row.pricedRuns, row.usd, row.retryOverheadUsd])).toEqual(
          ANSWER_OUTCOMES.map((outcome) => {
            const row = expected.get(outcome) ?? { runs: 0, priced: 0, usd: 0n, overhead: 0n }
            return [outcome, row.runs, row.priced, canonical(row.usd), canonical(row.overhead)]
          }),
        )
        const all = [...expected.values()]
        expect(report.usd).toBe(canonical(all.reduce((sum, row) => sum + row.usd, 0n)))
        expect(report.retryOverheadUsd).toBe(canonical(all.reduce((sum, row) => sum + row.overhead, 0n)))
        expect(report.unpricedRuns).toBe(all.reduce((sum, row) => sum + row.runs - row.priced, 0))
        const daily = await store.dailyReport({ since })
        expect(daily.days.map((day) => [day.day, day.complete + day.partial + day.cannotAnswer + day.failed, day.usd, day.retryOverheadUsd])).toEqual(
          [...perDay.entries()].sort(([left], [right]) => left.localeCompare(right)).map(([day, totals]) => [day, totals.runs, canonical(totals.usd), canonical(totals.overhead)]),
        )
        // Each property case starts from an empty table.
        await storeCase.exec('delete from runs')
      }),
      { numRuns: 15 },
    )
  })

  it('puts a cannot_answer run’s money on the tool whose required gaps alone stopped it, and the rest apart', async () => {
    const store = await storeCase.open()
    await store.migrate()
    await store.recordRuns([
      { runId: 'pay-1', outcome: 'cannot_answer', startedAt: daysAgo(1), costUsd: '0.010000', retryOverheadUsd: '0.002' },
      { runId: 'pay-2', outcome: 'cannot_answer', startedAt: daysAgo(2), costUsd: '0.000001' },
      { runId: 'both', outcome: 'cannot_answer', startedAt: daysAgo(1), costUsd: '1.5' },
      { runId: 'tickets', outcome: 'cannot_answer', startedAt: daysAgo(3), costUsd: '0.02' },
      { runId: 'enriching-only', outcome: 'partial', startedAt: daysAgo(1), costUsd: '7' },
      { runId: 'unpriced', outcome: 'cannot_answer', startedAt: daysAgo(1) },
      { runId: 'stale', outcome: 'cannot_answer', startedAt: daysAgo(60), costUsd: '100' },
    ])
    await store.recordGaps('pay-1', [{ tool: 'get_payment_history', criticality: 'required' }, { tool: 'get_payment_history', criticality: 'required' }, { tool: 'lookup_docs', criticality: 'enriching' }])
    await store.recordGaps('pay-2', [{ tool: 'get_payment_history', criticality: 'required' }])
    await store.recordGaps('both', [{ tool: 'get_payment_history', criticality: 'required' }, { tool: 'search_tickets', criticality: 'required' }])
    await store.recordGaps('tickets', [{ tool: 'search_tickets', criticality: 'required' }])
    await store.recordGaps('enriching-only', [{ tool: 'lookup_docs', criticality: 'enriching' }])
    await store.recordGaps('unpriced', [{ tool: 'search_tickets', criticality: 'required' }])
    await store.recordGaps('stale', [{ tool: 'get_payment_history', criticality: 'required' }])
    const report = await store.costReport()
    expect(report.tools).toEqual([
      { tool: 'search_tickets', runs: 2, usd: '0.020000' },
      { tool: 'get_payment_history', runs: 2, usd: '0.010001' },
    ])
    expect(report.unattributedLostUsd).toBe('1.500000')
    expect(report.outcomes.find((row) => row.outcome === 'cannot_answer')).toMatchObject({ runs: 5, pricedRuns: 4, usd: '1.530001', retryOverheadUsd: '0.002000' })
    expect(formatCostReport(report)).toBe(
      [
        'Outcome        Runs  Priced       Cost  Retry overhead',
        'complete          0       0  $0.000000       $0.000000',
        'partial           1       1  $7.000000       $0.000000',
        'cannot_answer     5       4  $1.530001       $0.002000',
        'failed            0       0  $0.000000       $0.000000',
        'total             6       5  $8.530001       $0.002000',
        '1 run recorded without a cost (not priced: run with --prices) is not in these sums.',
        '',
        'Tool                 Runs stopped       Lost',
        'search_tickets                  2  $0.020000',
        'get_payment_history             2  $0.010001',
        '$1.500000 more went to cannot_answer runs no single tool stopped.',
      ].join('\n'),
    )
  })

  it('keeps a recorded cost when the run is recorded again without one (a grade arriving later)', async () => {
    const store = await storeCase.open()
    await store.migrate()
    await store.recordRun({ runId: 'r1', outcome: 'complete', startedAt: daysAgo(1), costUsd: '0.004210', retryOverheadUsd: '0.000100', unpricedRequests: 1 })
    await store.recordRun({ runId: 'r1', outcome: 'complete', correct: true, startedAt: daysAgo(1) })
    const report = await store.costReport()
    expect(report.outcomes[0]).toEqual({ outcome: 'complete', runs: 1, pricedRuns: 1, usd: '0.004210', retryOverheadUsd: '0.000100', runsWithUnpricedRequests: 1 })
  })

  it('refuses a cost that is not a non-negative decimal string, naming the field, and writes nothing', async () => {
    const store = await storeCase.open()
    await store.migrate()
    for (const costUsd of ['-1', '1e-3', '0,5', ''] as const) {
      await expect(store.recordRun({ runId: 'r', outcome: 'complete', startedAt: NOW, costUsd })).rejects.toThrow(/run\.costUsd: expected a non-negative decimal string/)
    }
    await expect(store.recordRun({ runId: 'r', outcome: 'complete', startedAt: NOW, costUsd: 0.5 as unknown as string })).rejects.toThrow(PartialInputError)
    await expect(store.recordRuns([{ runId: 'r', outcome: 'complete', startedAt: NOW, retryOverheadUsd: '0.1' }])).rejects.toThrow(/runs\[0\]\.retryOverheadUsd: a retry overhead needs the run's costUsd/)
    expect((await store.outcomeReport()).total).toBe(0)
  })
})
