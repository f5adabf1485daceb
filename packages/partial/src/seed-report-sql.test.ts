import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dropSchema, failInCiWithoutPostgres, postgresUrl, uniqueSchema } from '../test/postgres.js'
import type { OutcomeStore } from './outcome-store.js'
import { createPostgresOutcomeStore } from './postgres-outcome-store.js'
import { SEED_GAPS_REPORT_SQL, SEED_OUTCOME_REPORT_SQL, withSinceParameter } from './seed-report-sql.js'

failInCiWithoutPostgres()

// The two queries as printed in the specification, character for character.
const SEED_OUTCOME_TEXT = `select
  count(*) filter (where outcome = 'complete')      as complete,
  count(*) filter (where outcome = 'partial')       as partial,
  count(*) filter (where outcome = 'cannot_answer') as cannot_answer,
  count(*) filter (where outcome = 'failed')        as failed,
  round(avg(correct::int) filter (where outcome = 'complete'), 2) as correct_complete,
  round(avg(correct::int) filter (where outcome = 'partial'), 2)  as correct_partial
  from runs
 where started_at > now() - interval '30 days';`
const SEED_GAPS_TEXT = `select tool, count(*) as gaps,
       count(*) filter (where criticality = 'required') as blocking
  from run_gaps
 where created_at > now() - interval '30 days'
 group by 1 order by blocking desc, gaps desc;`

describe('the seed’s SQL', () => {
  it('is kept verbatim, and the "since" form differs only in the window', () => {
    expect(SEED_OUTCOME_REPORT_SQL).toBe(SEED_OUTCOME_TEXT)
    expect(SEED_GAPS_REPORT_SQL).toBe(SEED_GAPS_TEXT)
    expect(withSinceParameter(SEED_OUTCOME_TEXT)).toBe(SEED_OUTCOME_TEXT.replace("now() - interval '30 days'", '$1'))
  })
})

describe.runIf(postgresUrl !== undefined)('the seed’s SQL against PostgreSQL', () => {
  const url = postgresUrl ?? ''
  const schema = uniqueSchema('seedsql')
  let store: OutcomeStore
  let client: pg.Client
  const daysAgo = (days: number) => new Date(Date.now() - days * 24 * 60 * 60 * 1000)

  beforeAll(async () => {
    store = createPostgresOutcomeStore({ connectionString: url, schema })
    await store.migrate()
    await store.recordRuns([
      { runId: 'a', outcome: 'complete', correct: true, startedAt: daysAgo(1) },
      { runId: 'b', outcome: 'complete', correct: false, startedAt: daysAgo(2) },
      { runId: 'c', outcome: 'complete', correct: true, startedAt: daysAgo(3) },
      { runId: 'd', outcome: 'partial', correct: true, startedAt: daysAgo(4) },
      { runId: 'e', outcome: 'cannot_answer', startedAt: daysAgo(5) },
      { runId: 'f', outcome: 'failed', startedAt: daysAgo(6) },
      { runId: 'old', outcome: 'complete', correct: false, startedAt: daysAgo(40) },
    ])
    await store.recordGaps('d', [{ tool: 'get_payment_history', criticality: 'enriching', reason: 'timed out', createdAt: daysAgo(4) }])
    await store.recordGaps('e', [
      { tool: 'get_payment_history', criticality: 'required', reason: 'timed out', createdAt: daysAgo(5) },
      { tool: 'search_tickets', criticality: 'confirming', reason: 'not reached', createdAt: daysAgo(5) },
    ])
    client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` })
    await client.connect()
  })

  afterAll(async () => {
    await client.end()
    await store.close()
    await dropSchema(url, schema)
  })

  it('the outcome query runs unchanged on the store’s tables and agrees with outcomeReport', async () => {
    const { rows } = await client.query(SEED_OUTCOME_TEXT)
    expect(rows[0]).toEqual({ complete: '3', partial: '1', cannot_answer: '1', failed: '1', correct_complete: '0.67', correct_partial: '1.00' })
    expect(await store.outcomeReport()).toEqual({
      complete: 3,
      partial: 1,
      cannotAnswer: 1,
      failed: 1,
      total: 6,
      correctComplete: 0.67,
      correctPartial: 1,
    })
    expect(await store.outcomeReport({ since: daysAgo(30) })).toEqual(await store.outcomeReport())
  })

  it('the gaps query runs unchanged on the store’s tables and agrees with gapsReport', async () => {
    const { rows } = await client.query(SEED_GAPS_TEXT)
    expect(rows).toEqual([
      { tool: 'get_payment_history', gaps: '2', blocking: '1' },
      { tool: 'search_tickets', gaps: '1', blocking: '0' },
    ])
    const report = await store.gapsReport({ since: daysAgo(30) })
    expect(report.tools).toEqual([
      { tool: 'get_payment_history', gaps: 2, blocking: 1 },
      { tool: 'search_tickets', gaps: 1, blocking: 0 },
    ])
    expect(await store.gapsReport()).toEqual(report)
  })
})
