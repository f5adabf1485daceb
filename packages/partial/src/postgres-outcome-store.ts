import type pg from 'pg'
import type { PoolClient } from 'pg'
import {
  type GapRecordInput,
  type MigrationResult,
  type NormalizedRun,
  type OutcomeStore,
  type ReportOptions,
  type RunRecordInput,
  normalizeGaps,
  normalizeRun,
  normalizeRuns,
  resolveSince,
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
]

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/
const BATCH_ROWS = 5_000

const UPSERT_RUNS_SQL = `
insert into runs (run_id, outcome, correct, started_at, workflow, disposition)
select * from unnest($1::text[], $2::text[], $3::boolean[], $4::timestamptz[], $5::text[], $6::text[])
on conflict (run_id) do update set
  outcome = excluded.outcome, correct = excluded.correct, started_at = excluded.started_at,
  workflow = excluded.workflow, disposition = excluded.disposition`

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
    close: async () => {
      if (closed) return
      closed = true
      await pool.end()
    },
  }
}
