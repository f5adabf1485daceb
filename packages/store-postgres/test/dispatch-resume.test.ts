// A resume through the dispatch runtime (locus serve --database-url): what it answers, and that its
// job is not lost in the job of the execution that just ended.
import { defineWorkflow } from '@locus/runtime'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createDispatchRuntime, createPostgresRunStore, enqueueRun, migrateDispatch, startRunWorker } from '../src/index.js'
import { admin, databaseUrl, until } from './pg-test-database.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL dispatch resume test: set LOCUS_TEST_PG_URL to run it')

const quick = defineWorkflow({ name: 'quick', run: () => ({ ok: true }) })

if (url !== undefined) {
  describe('resuming a run queued for workers', () => {
    const dbName = `locus_dispatch_resume_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    const dbUrl = databaseUrl(url, dbName)
    const client = new pg.Client({ connectionString: dbUrl })

    beforeAll(async () => {
      await admin(url, `create database ${dbName}`)
      await migrateDispatch(dbUrl)
      await client.connect()
    })
    afterAll(async () => {
      await client.end()
      await admin(url, `drop database if exists ${dbName} with (force)`)
    })

    it('answers the execution it queues, and queues a job even while the ended execution’s job is still locked', async () => {
      const runtime = await createDispatchRuntime({ connectionString: dbUrl, workflows: [quick] })
      try {
        await enqueueRun(client, { runId: 'just-failed', workflow: 'quick' })
        // The run failed a moment ago: its worker has not yet marked its job done, so the job is still locked.
        await client.query("update locus_runs set status = 'failed' where run_id = $1", ['just-failed'])
        await client.query("update graphile_worker._private_jobs set locked_at = now(), locked_by = 'finishing-worker' where key = $1", ['just-failed'])
        const handle = await runtime.resume('just-failed')
        expect(handle.executionId).toBe('resume-001')
        const { rows } = await client.query<{ locked_by: string | null }>("select locked_by from graphile_worker._private_jobs where payload->>'runId' = $1 order by id", ['just-failed'])
        // A job a worker can take, beside the locked one that is about to go.
        expect(rows.filter((row) => row.locked_by === null)).toHaveLength(1)
        await expect(runtime.resume('just-failed', { budgets: { maxTotalAgentInvocations: 2 } })).rejects.toThrow(/budgets: not supported for a queued resume|budgets cannot be given/)
      } finally {
        await runtime.close()
      }
    })

    it('a job that comes while another holder still has the lease (ending its execution, say) runs once the lease is free', async () => {
      const store = createPostgresRunStore({ connectionString: dbUrl, maxConnections: 2, migrate: false })
      const worker = await startRunWorker({ connectionString: dbUrl, workflows: [quick], leaseMs: 1000 })
      try {
        // The holder finishing the run's last execution: its lease is live when the job comes.
        const holder = await store.acquireLease('held-run', 'ending-worker', 3000)
        if (holder === undefined) throw new Error('no lease')
        await enqueueRun(client, { runId: 'held-run', workflow: 'quick' })
        await until('the worker to find the lease held', async () =>
          (await client.query("select 1 from graphile_worker._private_jobs where payload->>'runId' = $1 and locked_by is null and run_at > now()", ['held-run'])).rowCount === 1 ? true : undefined,
        )
        // It releases the lease without queueing the run again: the job that came meanwhile still runs it.
        expect(await store.releaseLease(holder)).toBe(true)
        await until('the run to complete', async () => ((await client.query<{ status: string }>('select status from locus_runs where run_id = $1', ['held-run'])).rows[0]?.status === 'completed' ? true : undefined), 15_000)
      } finally {
        await worker.stop()
        await store.close()
      }
    })
  })
}
