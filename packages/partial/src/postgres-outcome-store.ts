import type pg from 'pg'
import type { PoolClient } from 'pg'
import {
  type GapRecordInput,
  type MigrationResult,
  type NormalizedRun,
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
import { OutcomeStoreError, PartialInputError } from './partial-error.js'
import { SEED_GAPS_REPORT_SQL, SEED_OUTCOME_REPORT_SQL, withSinceParameter } from './seed-report-sql.js'
import { loadDriver } from './load-driver.js'

/** Options of {@link createPostgresOutcomeStore}. */
export interface PostgresOutcomeStoreOptions {
  /** A `postgres://` URL. It never appears in error messages. */
  readonly connectionString: string
  /**
   * Schema for the tables; created by `migrate()` and set as `search_path` on
   * every connection. Letters, digits and `_` only.
   * @default the connection's own search_path (usually `public`)
   */
  readonly schema?: string
  /**
   * Clock for a gap's default `createdAt` and, when given, the default report
   * window. Without it the default window is the seed's query as written,
   * measured by the database's `now()`.
   */
  readonly clock?: () => Date
  /**
   * Most connections the pool opens.
   * @default 4
   */
  readonly maxConnections?: number
}

const POSTGRES_MIGRATIONS: readonly { readonly version: number; readonly name: string; readonly sql: string }[] = [
  {
    version: 1,
    name: 'runs and run_gaps',
    sql: `
      create table runs (
        run_id text primary key,
        outcome text not null check (outcome in ('complete', 'partial', 'cannot_answer', 'failed')),
        correct boolean,
        started_at timestamptz not null,
        workflow text,
        disposition text check (disposition in ('completed', 'failed', 'cancelled'))
      );
      create index runs_started_at on runs (started_at) include (outcome, correct);
      create table run_gaps (
        id bigserial primary key,
        run_id text not null,
        step integer,
        tool text not null,
        criticality text not null check (criticality in ('required', 'enriching', 'confirming')),
        reason text not null,
        created_at timestamptz not null
      );
      create index run_gaps_created_at on run_gaps (created_at) include (tool, criticality);
      create index run_gaps_run_id on run_gaps (run_id);
    `,
  },
  {
    // Money as numeric, which sums exactly; rows recorded before keep null: recorded without a cost.
    version: 2,
    name: 'runs cost',
    sql: `
      alter table runs add column cost_usd numeric check (cost_usd >= 0),
        add column retry_overhead_usd numeric check (retry_overhead_usd >= 0),
        add column unpriced_requests integer;
    `,
  },
]

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/
const BATCH_ROWS = 5_000

const UPSERT_RUNS_SQL = `
insert into runs (run_id, outcome, correct, started_at, workflow, disposition, cost_usd, retry_overhead_usd, unpriced_requests)
select * from unnest($1::text[], $2::text[], $3::boolean[], $4::timestamptz[], $5::text[], $6::text[], $7::numeric[], $8::numeric[], $9::integer[])
on conflict (run_id) do update set
  outcome = excluded.outcome, correct = excluded.correct, started_at = excluded.started_at,
  workflow = excluded.workflow, disposition = excluded.disposition,
  cost_usd = coalesce(excluded.cost_usd, runs.cost_usd),
  retry_overhead_usd = coalesce(excluded.retry_overhead_usd, runs.retry_overhead_usd),
  unpriced_requests = coalesce(excluded.unpriced_requests, runs.unpriced_requests)`

// New queries, beside the seed's two. numeric sums exactly; ::text keeps every digit.
const COST_REPORT_SQL = `
select outcome, count(*) as runs, count(cost_usd) as priced_runs,
       coalesce(sum(cost_usd), 0)::text as usd,
       coalesce(sum(retry_overhead_usd), 0)::text as retry_overhead_usd,
       count(*) filter (where cost_usd is not null and unpriced_requests > 0) as runs_with_unpriced_requests
  from runs
 where started_at > $1
 group by outcome`

// A cannot_answer run whose required gaps all name one tool: its money is that tool's loss.
const TOOL_LOSS_SQL = `
select tool, count(*) as runs, coalesce(sum(cost_usd), 0)::text as usd
  from (select min(g.tool) as tool, r.cost_usd
          from runs r
          join run_gaps g on g.run_id = r.run_id and g.criticality = 'required'
         where r.outcome = 'cannot_answer' and r.started_at > $1
         group by r.run_id, r.cost_usd
        having count(distinct g.tool) = 1) blocked
 group by tool`

const DAILY_REPORT_SQL = `
select to_char(started_at at time zone 'UTC', 'YYYY-MM-DD') as day, outcome, count(*) as runs,
       coalesce(sum(cost_usd), 0)::text as usd,
       coalesce(sum(retry_overhead_usd), 0)::text as retry_overhead_usd
  from runs
 where started_at > $1
 group by 1, 2`

const INSERT_GAPS_SQL = `
insert into run_gaps (run_id, step, tool, criticality, reason, created_at)
select $1, * from unnest($2::integer[], $3::text[], $4::text[], $5::text[], $6::timestamptz[])`

const OUTCOME_REPORT_SINCE_SQL = withSinceParameter(SEED_OUTCOME_REPORT_SQL)
const GAPS_REPORT_SINCE_SQL = withSinceParameter(SEED_GAPS_REPORT_SQL)

/**
 * An outcome store in PostgreSQL through `pg`, for when runs from many
 * processes report to one place. The tables are `runs` and `run_gaps`, so the
 * specification's two report queries run against them unchanged.
 *
 * pg is an optional peer dependency, loaded here rather than on import;
 * without it this throws an `OutcomeStoreError` that says `npm install pg`.
 *
 * @example
 * ```ts
 * const store = createPostgresOutcomeStore({ connectionString: process.env.DATABASE_URL! })
 * await store.migrate()
 * console.log(await store.gapsReport())
 * await store.close()
 * ```
 */
export function createPostgresOutcomeStore(options: PostgresOutcomeStoreOptions): OutcomeStore {
  if (typeof options.connectionString !== 'string' || !/^postgres(ql)?:\/\//.test(options.connectionString)) {
    throw new PartialInputError('options.connectionString', 'expected a postgres:// or postgresql:// URL.')
  }
  const schema = options.schema
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new PartialInputError('options.schema', `"${schema}" is not a plain identifier; use letters, digits and _ only, starting with a letter or _.`)
  }
  const clock = options.clock
  const { Pool } = loadDriver('postgres', 'pg') as typeof pg
  const pool = new Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 4,
    ...(schema === undefined ? {} : { options: `-c search_path=${schema}` }),
  })
  // An idle connection dropped by the server must not crash the process; the next query reports it.
  pool.on('error', () => undefined)
  let closed = false

  const guarded = async <TResult>(operation: string, body: () => Promise<TResult>): Promise<TResult> => {
    try {
      if (closed) throw new Error('the store is closed')
      return await body()
    } catch (error) {
      if (PartialInputError.isInstance(error)) throw error
      throw new OutcomeStoreError('postgres', operation, error)
    }
  }

  const inTransaction = async <TResult>(body: (client: PoolClient) => Promise<TResult>): Promise<TResult> => {
    const client = await pool.connect()
    // The pool listens for errors on idle clients only: a session ended by the server while checked
    // out here would otherwise raise an unhandled 'error'. The broken client is destroyed on release.
    let lost: Error | undefined
    const onError = (error: Error): void => {
      lost = error
    }
    client.on('error', onError)
    try {
      await client.query('begin')
      const result = await body(client)
      await client.query('commit')
      return result
    } catch (error) {
      if (lost === undefined) await client.query('rollback').catch(() => undefined)
      throw error
    } finally {
      client.removeListener('error', onError)
      client.release(lost)
    }
  }

  const upsertRuns = async (client: PoolClient | pg.Pool, runs: readonly NormalizedRun[]): Promise<void> => {
    for (let start = 0; start < runs.length; start += BATCH_ROWS) {
      const batch = runs.slice(start, start + BATCH_ROWS)
      await client.query(UPSERT_RUNS_SQL, [
        batch.map((run) => run.runId),
        batch.map((run) => run.outcome),
        batch.map((run) => run.correct),
        batch.map((run) => run.startedAt),
        batch.map((run) => run.workflow),
        batch.map((run) => run.disposition),
        batch.map((run) => run.costUsd),
        batch.map((run) => run.retryOverheadUsd),
        batch.map((run) => run.unpricedRequests),
      ])
    }
  }

  const nowOr = (): Date => (clock === undefined ? new Date() : clock())

  return {
    kind: 'postgres',
    migrate: () =>
      guarded('migrate', () =>
        inTransaction(async (client): Promise<MigrationResult> => {
          // Serialises concurrent migrate() calls from several processes.
          await client.query("select pg_advisory_xact_lock(hashtext('locus.partial.outcome-store.migrate'))")
          if (schema !== undefined) await client.query(`create schema if not exists "${schema}"`)
          await client.query(`create table if not exists schema_migrations (
            version integer primary key, name text not null, applied_at timestamptz not null default now())`)
          const { rows } = await client.query<{ version: number }>('select version from schema_migrations')
          const done = new Set(rows.map((row) => row.version))
          const applied: number[] = []
          for (const migration of POSTGRES_MIGRATIONS) {
            if (done.has(migration.version)) continue
            await client.query(migration.sql)
            await client.query('insert into schema_migrations (version, name) values ($1, $2)', [migration.version, migration.name])
            applied.push(migration.version)
          }
          return { applied, version: Math.max(0, ...POSTGRES_MIGRATIONS.map((migration) => migration.version)) }
        }),
      ),
    recordRun: (run: RunRecordInput) =>
      guarded('recordRun', async () => {
        await upsertRuns(pool, [normalizeRun(run)])
      }),
    recordRuns: (runs: readonly RunRecordInput[]) =>
      guarded('recordRuns', async () => {
        const normalized = normalizeRuns(runs)
        if (normalized.length === 0) return
        await inTransaction((client) => upsertRuns(client, normalized))
      }),
    recordGaps: (runId: string, gaps: readonly GapRecordInput[]) =>
      guarded('recordGaps', async () => {
        const rows = normalizeGaps(runId, gaps, nowOr())
        if (rows.length === 0) return
        await pool.query(INSERT_GAPS_SQL, [
          runId,
          rows.map((gap) => gap.step),
          rows.map((gap) => gap.tool),
          rows.map((gap) => gap.criticality),
          rows.map((gap) => gap.reason),
          rows.map((gap) => gap.createdAt),
        ])
      }),
    outcomeReport: (reportOptions?: ReportOptions) =>
      guarded('outcomeReport', async () => {
        const result =
          reportOptions?.since === undefined && clock === undefined
            ? await pool.query(SEED_OUTCOME_REPORT_SQL)
            : await pool.query(OUTCOME_REPORT_SINCE_SQL, [resolveSince(reportOptions, nowOr())])
        return toOutcomeReport(result.rows[0] as Record<string, unknown> | undefined)
      }),
    gapsReport: (reportOptions?: ReportOptions) =>
      guarded('gapsReport', async () => {
        const result =
          reportOptions?.since === undefined && clock === undefined
            ? await pool.query(SEED_GAPS_REPORT_SQL)
            : await pool.query(GAPS_REPORT_SINCE_SQL, [resolveSince(reportOptions, nowOr())])
        return toGapsReport(result.rows as Record<string, unknown>[])
      }),
    costReport: (reportOptions?: ReportOptions) =>
      guarded('costReport', async () => {
        const since = resolveSince(reportOptions, nowOr())
        const outcomes = await pool.query<{ outcome: string; runs: string; priced_runs: string; usd: string; retry_overhead_usd: string; runs_with_unpriced_requests: string }>(COST_REPORT_SQL, [since])
        const tools = await pool.query<{ tool: string; runs: string; usd: string }>(TOOL_LOSS_SQL, [since])
        const rows: CostRow[] = outcomes.rows.map((row) => ({
          outcome: row.outcome,
          runs: Number(row.runs),
          pricedRuns: Number(row.priced_runs),
          usd: row.usd,
          retryOverheadUsd: row.retry_overhead_usd,
          runsWithUnpricedRequests: Number(row.runs_with_unpriced_requests),
        }))
        return toCostReport(rows, tools.rows.map((row) => ({ tool: row.tool, runs: Number(row.runs), usd: row.usd })))
      }),
    dailyReport: (reportOptions?: ReportOptions) =>
      guarded('dailyReport', async () => {
        const since = resolveSince(reportOptions, nowOr())
        const { rows } = await pool.query<{ day: string; outcome: string; runs: string; usd: string; retry_overhead_usd: string }>(DAILY_REPORT_SQL, [since])
        return toDailyReport(rows.map((row) => ({ day: row.day, outcome: row.outcome, runs: Number(row.runs), usd: row.usd, retryOverheadUsd: row.retry_overhead_usd })))
      }),
    close: async () => {
      if (closed) return
      closed = true
      await pool.end()
    },
  }
}
