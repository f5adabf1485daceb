import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import type BetterSqlite3 from 'better-sqlite3'
import type { Database as SqliteDatabase } from 'better-sqlite3'
import { loadDriver } from './load-driver.js'
import {
  type GapRecordInput,
  type MigrationResult,
  type OutcomeStore,
  type ReportOptions,
  type CostRow,
  type RunRecordInput,
  normalizeGaps,
  normalizeRun,
  normalizeRuns,
  resolveSince,
  toCostReport,
  toDailyReport,
  toGapsReport,
  toOutcomeReport,
} from './outcome-store.js'
import { UsdSum } from './usd-text.js'
import { OutcomeStoreError, PartialInputError } from './partial-error.js'

/** Options of {@link createSqliteOutcomeStore}. */
export interface SqliteOutcomeStoreOptions {
  /** Path of the database file, created with its directory when missing; `:memory:` for a throwaway store. */
  readonly path: string
  /**
   * The clock used for a gap's default `createdAt` and the default report window.
   * @default () => new Date()
   */
  readonly clock?: () => Date
}

/**
 * The schema, one entry per version. Instants are stored as epoch
 * milliseconds so the window filters compare integers on an index.
 */
const SQLITE_MIGRATIONS: readonly { readonly version: number; readonly name: string; readonly sql: string }[] = [
  {
    version: 1,
    name: 'runs and run_gaps',
    sql: `
      create table runs (
        run_id text primary key,
        outcome text not null check (outcome in ('complete', 'partial', 'cannot_answer', 'failed')),
        correct integer check (correct in (0, 1)),
        started_at integer not null,
        workflow text,
        disposition text check (disposition in ('completed', 'failed', 'cancelled'))
      );
      create index runs_started_at on runs (started_at, outcome, correct);
      create table run_gaps (
        id integer primary key,
        run_id text not null,
        step integer,
        tool text not null,
        criticality text not null check (criticality in ('required', 'enriching', 'confirming')),
        reason text not null,
        created_at integer not null
      );
      create index run_gaps_created_at on run_gaps (created_at, tool, criticality);
      create index run_gaps_run_id on run_gaps (run_id);
    `,
  },
  {
    // Money as exact decimal text (SQLite has no decimal type); sums are made as integers in TypeScript.
    // Rows recorded before keep null: recorded without a cost.
    version: 2,
    name: 'runs cost',
    sql: `
      alter table runs add column cost_usd text;
      alter table runs add column retry_overhead_usd text;
      alter table runs add column unpriced_requests integer;
    `,
  },
]

// The seed's outcome query in SQLite's dialect: the same columns and filters;
// `correct` is already 0/1, and the window is a parameter in epoch milliseconds.
const OUTCOME_REPORT_SQL = `
select
  count(*) filter (where outcome = 'complete')      as complete,
  count(*) filter (where outcome = 'partial')       as partial,
  count(*) filter (where outcome = 'cannot_answer') as cannot_answer,
  count(*) filter (where outcome = 'failed')        as failed,
  round(avg(correct) filter (where outcome = 'complete'), 2) as correct_complete,
  round(avg(correct) filter (where outcome = 'partial'), 2)  as correct_partial
  from runs
 where started_at > ?`

const GAPS_REPORT_SQL = `
select tool, count(*) as gaps,
       count(*) filter (where criticality = 'required') as blocking
  from run_gaps
 where created_at > ?
 group by 1 order by blocking desc, gaps desc`

// New queries, beside the seed's two. Amounts are canonical decimal text (digits, a point, six places or
// more): with the point taken out, amounts of the same number of places add exactly as SQLite integers
// (sum() raises on overflow, never rounds). Rows come grouped by places; UsdSum puts the groups together.
const units = (column: string): string => `sum(cast(replace(${column}, '.', '') as integer))`
const places = (column: string): string => `length(${column}) - instr(${column}, '.')`

const COST_REPORT_SQL = `
select outcome, ${places('cost_usd')} as usd_places, ${places('retry_overhead_usd')} as overhead_places,
       count(*) as runs, count(cost_usd) as priced_runs,
       ${units('cost_usd')} as usd_units, ${units('retry_overhead_usd')} as overhead_units,
       count(*) filter (where cost_usd is not null and unpriced_requests > 0) as runs_with_unpriced_requests
  from runs
 where started_at > ?
 group by 1, 2, 3`

// A cannot_answer run whose required gaps all name one tool: its money is that tool's loss.
const TOOL_LOSS_SQL = `
select tool, ${places('cost_usd')} as usd_places, count(*) as runs, ${units('cost_usd')} as usd_units
  from (select min(g.tool) as tool, r.cost_usd as cost_usd
          from runs r
          join run_gaps g on g.run_id = r.run_id and g.criticality = 'required'
         where r.outcome = 'cannot_answer' and r.started_at > ?
         group by r.run_id
        having count(distinct g.tool) = 1)
 group by 1, 2`

const DAILY_REPORT_SQL = `
select strftime('%Y-%m-%d', started_at / 1000, 'unixepoch') as day, outcome,
       ${places('cost_usd')} as usd_places, ${places('retry_overhead_usd')} as overhead_places,
       count(*) as runs, ${units('cost_usd')} as usd_units, ${units('retry_overhead_usd')} as overhead_units
  from runs
 where started_at > ?
 group by 1, 2, 3, 4`

/** The amount of `units` of 10^-places dollars, as decimal text (`0` for a group without amounts). */
function usdOfUnits(unitCount: bigint | null, placeCount: bigint | null): string {
  if (unitCount === null || placeCount === null) return '0'
  const count = Number(placeCount)
  const digits = unitCount.toString().padStart(count + 1, '0')
  return `${digits.slice(0, -count)}.${digits.slice(-count)}`
}

const UPSERT_RUN_SQL = `
insert into runs (run_id, outcome, correct, started_at, workflow, disposition, cost_usd, retry_overhead_usd, unpriced_requests)
values (@runId, @outcome, @correct, @startedAt, @workflow, @disposition, @costUsd, @retryOverheadUsd, @unpricedRequests)
on conflict (run_id) do update set
  outcome = excluded.outcome, correct = excluded.correct, started_at = excluded.started_at,
  workflow = excluded.workflow, disposition = excluded.disposition,
  cost_usd = coalesce(excluded.cost_usd, runs.cost_usd),
  retry_overhead_usd = coalesce(excluded.retry_overhead_usd, runs.retry_overhead_usd),
  unpriced_requests = coalesce(excluded.unpriced_requests, runs.unpriced_requests)`

const INSERT_GAP_SQL = `
insert into run_gaps (run_id, step, tool, criticality, reason, created_at)
values (?, ?, ?, ?, ?, ?)`

/**
 * An outcome store in a SQLite file through better-sqlite3: the embedded
 * default, with nothing to run beside the process. Call `migrate()` once
 * before use ({@link openOutcomeStore} does it for you).
 *
 * better-sqlite3 is an optional peer dependency, loaded here rather than on
 * import; without it this throws an `OutcomeStoreError` that says
 * `npm install better-sqlite3`.
 *
 * @example
 * ```ts
 * const store = createSqliteOutcomeStore({ path: '.locus-pi/runs/outcomes.sqlite' })
 * await store.migrate()
 * await store.recordRun({ runId: 'r1', outcome: 'partial', correct: true, startedAt: new Date() })
 * console.log(await store.outcomeReport())
 * await store.close()
 * ```
 */
export function createSqliteOutcomeStore(options: SqliteOutcomeStoreOptions): OutcomeStore {
  if (typeof options.path !== 'string' || options.path.length === 0) {
    throw new PartialInputError('options.path', 'give the path of the SQLite file, or ":memory:".')
  }
  const clock = options.clock ?? (() => new Date())
  const Database = loadDriver('sqlite', 'better-sqlite3') as typeof BetterSqlite3
  let database: SqliteDatabase
  try {
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true })
    database = new Database(options.path)
    database.pragma('journal_mode = WAL')
    database.pragma('synchronous = NORMAL')
    database.pragma('busy_timeout = 5000')
  } catch (error) {
    throw new OutcomeStoreError('sqlite', 'open', error)
  }

  // Runs a synchronous operation and turns driver errors into the typed store error.
  const guarded = <TResult>(operation: string, body: () => TResult): Promise<TResult> => {
    try {
      return Promise.resolve(body())
    } catch (error) {
      if (PartialInputError.isInstance(error)) return Promise.reject(error)
      return Promise.reject(new OutcomeStoreError('sqlite', operation, error))
    }
  }

  const toRow = (run: ReturnType<typeof normalizeRun>) => ({
    runId: run.runId,
    outcome: run.outcome,
    correct: run.correct === null ? null : run.correct ? 1 : 0,
    startedAt: run.startedAt.getTime(),
    workflow: run.workflow,
    disposition: run.disposition,
    costUsd: run.costUsd,
    retryOverheadUsd: run.retryOverheadUsd,
    unpricedRequests: run.unpricedRequests,
  })

  return {
    kind: 'sqlite',
    migrate: () =>
      guarded('migrate', (): MigrationResult => {
        const applied: number[] = []
        // `immediate` takes the write lock first, so two processes cannot both apply a version.
        database
          .transaction(() => {
            database.exec(`create table if not exists schema_migrations (
              version integer primary key, name text not null, applied_at integer not null)`)
            const done = new Set(
              database.prepare('select version from schema_migrations').pluck().all() as number[],
            )
            for (const migration of SQLITE_MIGRATIONS) {
              if (done.has(migration.version)) continue
              database.exec(migration.sql)
              database
                .prepare('insert into schema_migrations (version, name, applied_at) values (?, ?, ?)')
                .run(migration.version, migration.name, clock().getTime())
              applied.push(migration.version)
            }
          })
          .immediate()
        return { applied, version: Math.max(0, ...SQLITE_MIGRATIONS.map((migration) => migration.version)) }
      }),
    recordRun: (run: RunRecordInput) =>
      guarded('recordRun', () => {
        database.prepare(UPSERT_RUN_SQL).run(toRow(normalizeRun(run)))
      }),
    recordRuns: (runs: readonly RunRecordInput[]) =>
      guarded('recordRuns', () => {
        const rows = normalizeRuns(runs).map(toRow)
        const statement = database.prepare(UPSERT_RUN_SQL)
        database.transaction(() => {
          for (const row of rows) statement.run(row)
        })()
      }),
    recordGaps: (runId: string, gaps: readonly GapRecordInput[]) =>
      guarded('recordGaps', () => {
        const rows = normalizeGaps(runId, gaps, clock())
        const statement = database.prepare(INSERT_GAP_SQL)
        database.transaction(() => {
          for (const gap of rows) statement.run(runId, gap.step, gap.tool, gap.criticality, gap.reason, gap.createdAt.getTime())
        })()
      }),
    outcomeReport: (reportOptions?: ReportOptions) =>
      guarded('outcomeReport', () => {
        const since = resolveSince(reportOptions, clock())
        return toOutcomeReport(database.prepare(OUTCOME_REPORT_SQL).get(since.getTime()) as Record<string, unknown> | undefined)
      }),
    gapsReport: (reportOptions?: ReportOptions) =>
      guarded('gapsReport', () => {
        const since = resolveSince(reportOptions, clock())
        return toGapsReport(database.prepare(GAPS_REPORT_SQL).all(since.getTime()) as Record<string, unknown>[])
      }),
    costReport: (reportOptions?: ReportOptions) =>
      guarded('costReport', () => {
        const since = resolveSince(reportOptions, clock()).getTime()
        const sums = new Map<string, { runs: number; pricedRuns: number; usd: UsdSum; overhead: UsdSum; withUnpriced: number }>()
        const rows = database.prepare(COST_REPORT_SQL).safeIntegers().all(since) as {
          outcome: string
          usd_places: bigint | null
          overhead_places: bigint | null
          runs: bigint
          priced_runs: bigint
          usd_units: bigint | null
          overhead_units: bigint | null
          runs_with_unpriced_requests: bigint
        }[]
        for (const row of rows) {
          let sum = sums.get(row.outcome)
          if (sum === undefined) {
            sum = { runs: 0, pricedRuns: 0, usd: new UsdSum(), overhead: new UsdSum(), withUnpriced: 0 }
            sums.set(row.outcome, sum)
          }
          sum.runs += Number(row.runs)
          sum.pricedRuns += Number(row.priced_runs)
          sum.withUnpriced += Number(row.runs_with_unpriced_requests)
          sum.usd.add(usdOfUnits(row.usd_units, row.usd_places))
          sum.overhead.add(usdOfUnits(row.overhead_units, row.overhead_places))
        }
        const costRows: CostRow[] = [...sums.entries()].map(([outcome, sum]) => ({
          outcome,
          runs: sum.runs,
          pricedRuns: sum.pricedRuns,
          usd: sum.usd.toString(),
          retryOverheadUsd: sum.overhead.toString(),
          runsWithUnpricedRequests: sum.withUnpriced,
        }))
        const tools = new Map<string, { runs: number; usd: UsdSum }>()
        for (const row of database.prepare(TOOL_LOSS_SQL).safeIntegers().all(since) as { tool: string; usd_places: bigint | null; runs: bigint; usd_units: bigint | null }[]) {
          let tool = tools.get(row.tool)
          if (tool === undefined) {
            tool = { runs: 0, usd: new UsdSum() }
            tools.set(row.tool, tool)
          }
          tool.runs += Number(row.runs)
          tool.usd.add(usdOfUnits(row.usd_units, row.usd_places))
        }
        return toCostReport(costRows, [...tools.entries()].map(([tool, sum]) => ({ tool, runs: sum.runs, usd: sum.usd.toString() })))
      }),
    dailyReport: (reportOptions?: ReportOptions) =>
      guarded('dailyReport', () => {
        const since = resolveSince(reportOptions, clock()).getTime()
        const rows = database.prepare(DAILY_REPORT_SQL).safeIntegers().all(since) as {
          day: string
          outcome: string
          usd_places: bigint | null
          overhead_places: bigint | null
          runs: bigint
          usd_units: bigint | null
          overhead_units: bigint | null
        }[]
        return toDailyReport(
          rows.map((row) => ({
            day: row.day,
            outcome: row.outcome,
            runs: Number(row.runs),
            usd: usdOfUnits(row.usd_units, row.usd_places),
            retryOverheadUsd: usdOfUnits(row.overhead_units, row.overhead_places),
          })),
        )
      }),
    close: () =>
      guarded('close', () => {
        if (database.open) database.close()
      }),
  }
}
