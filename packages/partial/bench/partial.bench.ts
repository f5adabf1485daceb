// Outcome metrics at volume: the time to record 100,000 runs and to produce
// both reports over them, per store, next to raw better-sqlite3 baselines
// measured in the same run. PostgreSQL joins when LOCUS_TEST_PG_URL is set.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BenchCase, formatNs, measure, printTable, reportTarget } from '@locus/bench-kit'
import {
  ANSWER_OUTCOMES,
  type GapRecordInput,
  type OutcomeStore,
  type RunRecordInput,
} from '@locus/partial'
import { createPostgresOutcomeStore } from '@locus/partial/postgres'
import { createSqliteOutcomeStore } from '@locus/partial/sqlite'
import Database from 'better-sqlite3'
import pg from 'pg'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const runCount = smoke ? 1_000 : 100_000
const recordRounds = smoke ? 1 : 3
const recordWarmup = smoke ? 0 : 1
const postgresUrl = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
const DAY = 24 * 60 * 60 * 1000
const now = Date.now()
const tools = ['get_payment_history', 'search_tickets', 'get_invoices', 'lookup_docs', 'get_contract']

function makeRuns(prefix: string): RunRecordInput[] {
  return Array.from({ length: runCount }, (_, index) => {
    // Roughly the seed's mix: mostly complete, about a tenth partial, a few cannot_answer and failed.
    const roll = (index * 7919) % 1000
    const outcome = roll < 876 ? ANSWER_OUTCOMES[0] : roll < 973 ? ANSWER_OUTCOMES[1] : roll < 997 ? ANSWER_OUTCOMES[2] : ANSWER_OUTCOMES[3]
    return {
      runId: `${prefix}-${index}`,
      outcome,
      correct: outcome === 'complete' || outcome === 'partial' ? roll % 20 !== 0 : null,
      startedAt: new Date(now - (index % 40) * DAY - 1000),
      workflow: 'account-question',
    }
  })
}

function makeGaps(index: number): GapRecordInput[] {
  const tool = tools[index % 7 === 0 ? 0 : index % tools.length] ?? 'lookup_docs'
  return [{ tool, criticality: index % 3 === 0 ? 'required' : 'enriching', reason: 'timed out', createdAt: new Date(now - (index % 40) * DAY - 1000) }]
}

const directory = await mkdtemp(join(tmpdir(), 'locus-partial-bench-'))
const schema = `locus_partial_bench_${process.pid}`
const cleanups: (() => Promise<void>)[] = []

try {
  // --- recording ---
  const batches = Array.from({ length: recordRounds + recordWarmup }, (_, round) => makeRuns(`r${round}`))
  const nextBatch = () => {
    let round = 0
    return () => batches[round++ % batches.length] ?? []
  }

  const rawRecord = new Database(join(directory, 'raw-record.sqlite'))
  rawRecord.pragma('journal_mode = WAL')
  rawRecord.pragma('synchronous = NORMAL')
  rawRecord.exec('create table runs (run_id text primary key, outcome text, correct integer, started_at integer, workflow text)')
  const rawInsert = rawRecord.prepare('insert into runs values (?, ?, ?, ?, ?)')
  const rawBatch = nextBatch()
  const rawInsertAll = rawRecord.transaction((runs: readonly RunRecordInput[]) => {
    for (const run of runs) {
      rawInsert.run(run.runId, run.outcome, run.correct === null || run.correct === undefined ? null : run.correct ? 1 : 0, (run.startedAt as Date).getTime(), run.workflow)
    }
  })
  cleanups.push(async () => {
    rawRecord.close()
  })

  const sqliteRecordStore = createSqliteOutcomeStore({ path: join(directory, 'record.sqlite') })
  await sqliteRecordStore.migrate()
  cleanups.push(() => sqliteRecordStore.close())
  const sqliteBatch = nextBatch()

  const recordCases: BenchCase[] = [
    {
      name: 'raw better-sqlite3 insert',
      operations: runCount,
      run: () => {
        rawInsertAll(rawBatch())
      },
    },
    { name: 'sqlite recordRuns', operations: runCount, run: () => sqliteRecordStore.recordRuns(sqliteBatch()) },
  ]

  let postgresRecordStore: OutcomeStore | undefined
  if (postgresUrl !== undefined) {
    postgresRecordStore = createPostgresOutcomeStore({ connectionString: postgresUrl, schema: `${schema}_record` })
    await postgresRecordStore.migrate()
    const store = postgresRecordStore
    cleanups.push(async () => {
      await store.close()
      await dropSchema(postgresUrl, `${schema}_record`)
    })
    const postgresBatch = nextBatch()
    recordCases.push({ name: 'postgres recordRuns', operations: runCount, run: () => store.recordRuns(postgresBatch()) })
  }

  const recorded = await measure(recordCases, { rounds: recordRounds, warmupRounds: recordWarmup })
  printTable(`@locus/partial: record ${runCount.toLocaleString('en-US')} runs in one call (per run)`, recorded, 'raw better-sqlite3 insert')
  for (const result of recorded) console.log(`  ${result.name}: ${formatNs(result.nsPerOp * runCount)} for ${runCount.toLocaleString('en-US')} runs`)

  // --- reports over exactly runCount runs ---
  const reportRuns = makeRuns('report')
  const gapRunIndexes = reportRuns.map((_, index) => index).filter((index) => index % 8 === 0)

  const sqliteReportPath = join(directory, 'report.sqlite')
  const sqliteReportStore = createSqliteOutcomeStore({ path: sqliteReportPath })
  await sqliteReportStore.migrate()
  cleanups.push(() => sqliteReportStore.close())
  await sqliteReportStore.recordRuns(reportRuns)
  for (const index of gapRunIndexes) await sqliteReportStore.recordGaps(`report-${index}`, makeGaps(index))

  const rawReport = new Database(sqliteReportPath, { readonly: true })
  cleanups.push(async () => {
    rawReport.close()
  })
  const rawCount = rawReport.prepare('select count(*) from runs where started_at > ?').pluck()
  const since = new Date(now - 30 * DAY)

  let sink = 0
  const reportCases: BenchCase[] = [
    { name: 'raw select count(*) (sqlite)', run: () => (sink += rawCount.get(since.getTime()) as number) },
    { name: 'sqlite outcomeReport', run: async () => (sink += (await sqliteReportStore.outcomeReport({ since })).total) },
    { name: 'sqlite gapsReport', run: async () => (sink += (await sqliteReportStore.gapsReport({ since })).totalGaps) },
  ]

  if (postgresUrl !== undefined) {
    const store = createPostgresOutcomeStore({ connectionString: postgresUrl, schema: `${schema}_report` })
    await store.migrate()
    cleanups.push(async () => {
      await store.close()
      await dropSchema(postgresUrl, `${schema}_report`)
    })
    await store.recordRuns(reportRuns)
    for (const index of gapRunIndexes) await store.recordGaps(`report-${index}`, makeGaps(index))
    reportCases.push(
      { name: 'postgres outcomeReport', run: async () => (sink += (await store.outcomeReport({ since })).total) },
      { name: 'postgres gapsReport', run: async () => (sink += (await store.gapsReport({ since })).totalGaps) },
    )
  }

  const reports = await measure(reportCases, { rounds: smoke ? 1 : 7, warmupRounds: smoke ? 0 : 2 })
  printTable(
    `@locus/partial: one report over ${runCount.toLocaleString('en-US')} runs and ${gapRunIndexes.length.toLocaleString('en-US')} gaps (30-day window)`,
    reports,
    'raw select count(*) (sqlite)',
  )
  for (const name of ['sqlite outcomeReport', 'sqlite gapsReport']) {
    const result = reports.find((candidate) => candidate.name === name)
    if (result !== undefined) reportTarget(`${name} over ${runCount.toLocaleString('en-US')} runs`, result.nsPerOp / 1e6, 100, ' ms')
  }
  if (sink < 0) console.log(sink)
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup()
  await rm(directory, { recursive: true, force: true })
}

async function dropSchema(url: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`drop schema if exists "${name}" cascade`)
  } finally {
    await client.end()
  }
}
