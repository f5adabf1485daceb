// An approval parked on PostgreSQL: its onTimeout deadline wakes it like a timer, and an answer kept from
// another process carries who decided and how into the run's deferred_settled.
import type { JournalLine } from '@locus/journal'
import { defineTool, defineWorkflow, keepDeferredAnswer } from '@locus/runtime'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type RunWorker, createPostgresRunStore, enqueueRun, migrateDispatch, startRunWorker } from '../src/index.js'
import { admin, databaseUrl, until } from './pg-test-database.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL approval deadline tests: set LOCUS_TEST_PG_URL to run them')

const approval = defineWorkflow({
  name: 'pg-approval',
  input: z.object({ secs: z.number() }),
  tools: {
    approve: defineTool({
      deferred: true,
      input: z.object({}),
      output: z.object({ approved: z.boolean() }),
      retry: { timeout_secs: 2, max_retries: 1, backoff_base_secs: 0, backoff_max_secs: 0 },
      onTimeout: { default: { approved: false } },
    }),
  },
  run: async ({ tool }) => ({ ok: true, decision: await tool('approve', {}) }),
})

if (url !== undefined) {
  describe('an approval parked on PostgreSQL', () => {
    const dbName = `locus_approval_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    const dbUrl = databaseUrl(url, dbName)
    let worker: RunWorker | undefined
    let client: pg.Client

    const status = async (runId: string): Promise<string | undefined> =>
      (await client.query<{ status: string }>('select status from locus_runs where run_id = $1', [runId])).rows[0]?.status
    const linesOf = async (runId: string): Promise<JournalLine[]> =>
      (await client.query<{ line: JournalLine }>('select line from locus_journal where run_id = $1 order by execution_id, seq', [runId])).rows.map((row) => row.line)
    const parked = (runId: string) =>
      until(`${runId} to be parked`, async () => ((await status(runId)) === 'waiting' ? true : undefined), 15_000)
    const ended = (runId: string) =>
      until(`${runId} to end`, async () => {
        const now = await status(runId)
        return now === 'completed' || now === 'failed' || now === 'cancelled' ? now : undefined
      }, 20_000)

    beforeAll(async () => {
      await admin(url, `create database ${dbName}`)
      await migrateDispatch(dbUrl)
      client = new pg.Client({ connectionString: dbUrl })
      await client.connect()
      worker = await startRunWorker({ connectionString: dbUrl, workflows: [approval], concurrency: 2, leaseMs: 2000, parkAfterMs: 100 })
    })
    afterAll(async () => {
      await worker?.stop().catch(() => undefined)
      await client.end()
      await admin(url, `drop database if exists ${dbName} with (force)`)
    })

    it('parks with a job at the deadline; the deadline wakes it and the resume completes it with the default, opening nothing again', async () => {
      const runId = 'approval-deadline'
      await enqueueRun(client, { runId, workflow: 'pg-approval', input: { secs: 2 } })
      await parked(runId)
      const open = (await linesOf(runId)).find((line) => line.type === 'deferred_open')
      const deferredId = open?.type === 'deferred_open' ? open.deferredId : ''
      const jobs = await client.query<{ key: string; run_at: Date }>(`select key, run_at from graphile_worker.jobs where key like $1`, [`${runId}:timer:%`])
      expect(jobs.rows).toEqual([{ key: `${runId}:timer:${deferredId}`, run_at: new Date(open?.type === 'deferred_open' ? (open.expiresAt ?? '') : '') }])
      expect(await ended(runId)).toBe('completed')
      const lines = await linesOf(runId)
      expect(lines.filter((line) => line.type === 'deferred_open')).toHaveLength(1)
      expect(lines.find((line) => line.type === 'deferred_expired')).toMatchObject({ deferredId, applied: 'default', result: { approved: false }, executionId: 'resume-001' })
      expect(lines.find((line) => line.type === 'run_end')).toMatchObject({ result: { ok: true, decision: { approved: false } } })
    })

    it('an answer kept by another process names who decided and how in the deferred_settled the worker writes', async () => {
      const runId = 'approval-answered'
      await enqueueRun(client, { runId, workflow: 'pg-approval', input: { secs: 2 } })
      await parked(runId)
      const open = (await linesOf(runId)).find((line) => line.type === 'deferred_open')
      const deferredId = open?.type === 'deferred_open' ? open.deferredId : ''
      const store = createPostgresRunStore({ connectionString: dbUrl, maxConnections: 2, migrate: false })
      try {
        expect(await keepDeferredAnswer(store, runId, deferredId, { kind: 'resolved', result: { approved: true }, decidedBy: 'cli', via: 'cli' })).toMatchObject({ ok: true, status: 'stored' })
        // The same decision by someone else is the same answer.
        expect(await keepDeferredAnswer(store, runId, deferredId, { kind: 'resolved', result: { approved: true }, decidedBy: 'ops-key', via: 'api' })).toMatchObject({ ok: true, status: 'already-answered' })
      } finally {
        await store.close()
      }
      expect(await ended(runId)).toBe('completed')
      const lines = await linesOf(runId)
      expect(lines.find((line) => line.type === 'deferred_settled')).toMatchObject({ deferredId, outcome: 'resolved', result: { approved: true }, decidedBy: 'cli', via: 'cli' })
      expect(lines.some((line) => line.type === 'deferred_expired')).toBe(false)
    })
  })
}
