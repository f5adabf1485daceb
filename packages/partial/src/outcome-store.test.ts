import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { dropSchema, failInCiWithoutPostgres, postgresUrl, uniqueSchema } from '../test/postgres.js'
import { runWithGaps } from '../test/fixtures.js'
import type { AnswerOutcome } from './answer-outcome.js'
import { assessPartial } from './assess-partial.js'
import { formatGapsReport, formatOutcomeReport } from './format-report.js'
import { OUTCOME_STORE_FILE, openOutcomeStore } from './open-outcome-store.js'
import type { GapRecordInput, OutcomeStore, RunRecordInput } from './outcome-store.js'
import { OutcomeStoreError, PartialInputError } from './partial-error.js'
import { createPostgresOutcomeStore } from './postgres-outcome-store.js'
import { createSqliteOutcomeStore } from './sqlite-outcome-store.js'

failInCiWithoutPostgres()

const NOW = new Date('2025-06-30T12:00:00.000Z')
const clock = () => NOW
const daysAgo = (days: number) => new Date(NOW.getTime() - days * 24 * 60 * 60 * 1000)

interface StoreCase {
  readonly name: 'sqlite' | 'postgres'
  /** A fresh, unmigrated store in its own file or schema. */
  open(): Promise<OutcomeStore>
  /** Rows in schema_migrations of the store opened last. */
  countMigrations(): Promise<number>
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
      const directory = await mkdtemp(join(tmpdir(), 'locus-partial-'))
      lastPath = join(directory, 'outcomes.sqlite')
      const store = createSqliteOutcomeStore({ path: lastPath, clock })
      cleanups.push(async () => {
        await store.close()
        await rm(directory, { recursive: true, force: true })
      })
      return store
    },
    async countMigrations() {
      const database = new Database(lastPath, { readonly: true })
      try {
        return (database.prepare('select count(*) as count from schema_migrations').get() as { count: number }).count
      } finally {
        database.close()
      }
    },
  }
})()

const postgresCase = (url: string): StoreCase => {
  let lastSchema = ''
  return {
    name: 'postgres',
    async open() {
      lastSchema = uniqueSchema('store')
      const schema = lastSchema
      const store = createPostgresOutcomeStore({ connectionString: url, schema, clock })
      cleanups.push(async () => {
        await store.close()
        await dropSchema(url, schema)
      })
      return store
    },
    async countMigrations() {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      try {
        const result = await client.query<{ count: string }>(`select count(*) as count from "${lastSchema}".schema_migrations`)
        return Number(result.rows[0]?.count)
      } finally {
        await client.end()
      }
    },
  }
}

const cases: StoreCase[] = [sqliteCase]
if (postgresUrl !== undefined) cases.push(postgresCase(postgresUrl))

/** Runs with the seed's Atlas counts: 2,641 complete at 0.95 correct, 294 partial at 0.91, 71 cannot_answer, 9 failed. */
function atlasRuns(): RunRecordInput[] {
  const runs: RunRecordInput[] = []
  const add = (outcome: AnswerOutcome, count: number, correctCount: number | null) => {
    for (let index = 0; index < count; index += 1) {
      runs.push({
        runId: `${outcome}-${index}`,
        outcome,
        correct: correctCount === null ? null : index < correctCount,
        startedAt: daysAgo(1 + (index % 28)),
        workflow: 'account-question',
      })
    }
  }
  add('complete', 2641, 2509)
  add('partial', 294, 267)
  add('cannot_answer', 71, null)
  add('failed', 9, null)
  return runs
}

describe.each(cases)('OutcomeStore on $name', (storeCase) => {
  it('migrations are versioned and idempotent: running migrate twice is a no-op', async () => {
    const store = await storeCase.open()
    expect(await store.migrate()).toEqual({ applied: [1, 2], version: 2 })
    await store.recordRun({ runId: 'kept', outcome: 'complete', correct: true, startedAt: daysAgo(1) })
    expect(await store.migrate()).toEqual({ applied: [], version: 2 })
    expect(await storeCase.countMigrations()).toBe(2)
    expect((await store.outcomeReport()).complete).toBe(1)
  })

  it('feeding the seed’s Atlas counts reproduces the seed’s outcome table', async () => {
    const store = await storeCase.open()
    await store.migrate()
    await store.recordRuns(atlasRuns())
    // Older than the window: must not count.
    await store.recordRuns([{ runId: 'old', outcome: 'failed', startedAt: daysAgo(45) }])
    const report = await store.outcomeReport({ since: daysAgo(30) })
    expect(report).toEqual({
      complete: 2641,
      partial: 294,
      cannotAnswer: 71,
      failed: 9,
      total: 3015,
      correctComplete: 0.95,
      correctPartial: 0.91,
    })
    expect(formatOutcomeReport(report)).toBe(
      [
        'Outcome         Runs  Correct',
        'complete       2,641     0.95',
        'partial          294     0.91',
        'cannot_answer     71      n/a',
        'failed             9      n/a',
      ].join('\n'),
    )
    // "Partial runs are 9.7% of the total" (the seed truncates 9.75%).
    expect(Math.floor((report.partial / report.total) * 1000) / 10).toBe(9.7)
  })

  it('the default window is the last 30 days by the store clock', async () => {
    const store = await storeCase.open()
    await store.migrate()
    await store.recordRuns([
      { runId: 'recent', outcome: 'partial', correct: true, startedAt: daysAgo(29) },
      { runId: 'stale', outcome: 'partial', correct: false, startedAt: daysAgo(31) },
    ])
    expect(await store.outcomeReport()).toMatchObject({ partial: 1, correctPartial: 1 })
  })

  it('gaps per tool are ordered by blocking then total, and show one tool dominating', async () => {
    const store = await storeCase.open()
    await store.migrate()
    const plan: [string, number, number][] = [
      ['search_tickets', 90, 0],
      ['get_payment_history', 118, 41],
      ['lookup_docs', 37, 0],
      ['get_invoices', 50, 30],
    ]
    let run = 0
    for (const [tool, gaps, blocking] of plan) {
      for (let index = 0; index < gaps; index += 1) {
        const gap: GapRecordInput = { tool, criticality: index < blocking ? 'required' : 'enriching', reason: 'timed out', createdAt: daysAgo(2) }
        await store.recordGaps(`run-${run++}`, [gap])
      }
    }
    await store.recordGaps('old-run', [{ tool: 'lookup_docs', criticality: 'required', createdAt: daysAgo(60) }])
    const report = await store.gapsReport({ since: daysAgo(30) })
    expect(report.tools).toEqual([
      { tool: 'get_payment_history', gaps: 118, blocking: 41 },
      { tool: 'get_invoices', gaps: 50, blocking: 30 },
      { tool: 'search_tickets', gaps: 90, blocking: 0 },
      { tool: 'lookup_docs', gaps: 37, blocking: 0 },
    ])
    expect(report.totalGaps).toBe(295)
    expect(formatGapsReport(report).split('\n')[1]).toMatch(/^get_payment_history\s+118\s+41\s+40%$/)
  })

  it('records an assessment’s gaps as they are, stamped by the store clock', async () => {
    const store = await storeCase.open()
    await store.migrate()
    const run = runWithGaps()
    await store.recordGaps('run-1', assessPartial(run.plan, run.results).gaps)
    expect(await store.gapsReport()).toEqual({ tools: [{ tool: 'get_payment_history', gaps: 1, blocking: 0 }], totalGaps: 1 })
  })

  it('recording a run id again updates its row, so a grade can arrive later', async () => {
    const store = await storeCase.open()
    await store.migrate()
    await store.recordRun({ runId: 'r1', outcome: 'partial', startedAt: daysAgo(1).toISOString() })
    expect(await store.outcomeReport()).toMatchObject({ partial: 1, correctPartial: null })
    await store.recordRun({ runId: 'r1', outcome: 'partial', correct: false, startedAt: daysAgo(1), disposition: 'failed' })
    expect(await store.outcomeReport()).toMatchObject({ partial: 1, total: 1, correctPartial: 0 })
  })

  it('rejects a run record with an unknown outcome, naming the field, before touching the database', async () => {
    const store = await storeCase.open()
    await store.migrate()
    const bad = { runId: 'r1', outcome: 'error', startedAt: NOW } as unknown as RunRecordInput
    await expect(store.recordRun(bad)).rejects.toThrow(PartialInputError)
    await expect(store.recordRuns([bad])).rejects.toThrow(/runs\[0\]\.outcome/)
    await expect(store.recordGaps('r1', [{ tool: 'x', criticality: 'optional' } as unknown as GapRecordInput])).rejects.toThrow(/gaps\[0\]\.criticality/)
  })

  it('says to call migrate() when the tables are missing', async () => {
    const store = await storeCase.open()
    const failure = await store.outcomeReport().catch((error: unknown) => error)
    expect(OutcomeStoreError.isInstance(failure)).toBe(true)
    expect((failure as OutcomeStoreError).operation).toBe('outcomeReport')
    expect((failure as Error).message).toMatch(/migrate\(\)/)
  })

  it('fails with a typed error after close()', async () => {
    const store = await storeCase.open()
    await store.migrate()
    await store.close()
    await expect(store.recordRun({ runId: 'r', outcome: 'complete', startedAt: NOW })).rejects.toSatisfy(OutcomeStoreError.isInstance)
  })
})

describe('openOutcomeStore', () => {
  const directories: string[] = []
  afterAll(async () => {
    for (const directory of directories) await rm(directory, { recursive: true, force: true })
  })

  it('opens a migrated SQLite file in the runs directory when no database URL is configured', async () => {
    const runsDir = join(await mkdtemp(join(tmpdir(), 'locus-partial-runs-')), 'runs')
    directories.push(runsDir)
    const store = await openOutcomeStore({ runsDir, databaseUrl: '' })
    try {
      expect(store.kind).toBe('sqlite')
      expect(existsSync(join(runsDir, OUTCOME_STORE_FILE))).toBe(true)
      await store.recordRun({ runId: 'r', outcome: 'complete', startedAt: new Date() })
      expect((await store.outcomeReport()).complete).toBe(1)
    } finally {
      await store.close()
    }
  })

  it.runIf(postgresUrl !== undefined)('opens a migrated PostgreSQL store when a database URL is configured', async () => {
    const schema = uniqueSchema('open')
    const store = await openOutcomeStore({ runsDir: '/nonexistent', databaseUrl: postgresUrl!, schema })
    try {
      expect(store.kind).toBe('postgres')
      expect(await store.migrate()).toEqual({ applied: [], version: 2 })
    } finally {
      await store.close()
      await dropSchema(postgresUrl!, schema)
    }
  })

  it('rejects a missing runs directory option', async () => {
    await expect(openOutcomeStore({ runsDir: '' })).rejects.toThrow(/options\.runsDir/)
  })
})
