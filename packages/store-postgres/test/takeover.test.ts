import type { JournalLine } from '@locus/journal'
import { defineTool, defineWorkflow } from '@locus/runtime'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type RunWorker, createPostgresRunStore, enqueueRun, migrateDispatch, startRunWorker } from '../src/index.js'
import { admin, databaseUrl, until } from './pg-test-database.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL takeover test: set LOCUS_TEST_PG_URL to run it')

const quick = defineWorkflow({
  name: 'quick',
  tools: { step: defineTool({ input: z.object({}), run: () => ({ done: true }) }) },
  async run({ tool }) {
    await tool('step', {})
    return { ok: true }
  },
})

if (url !== undefined) {
  describe('taking over a run whose owner stopped heartbeating', () => {
    const dbName = `locus_takeover_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    const dbUrl = databaseUrl(url, dbName)
    let worker: RunWorker | undefined

    beforeAll(async () => {
      await admin(url, `create database ${dbName}`)
      await migrateDispatch(dbUrl)
    })
    afterAll(async () => {
      await worker?.stop()
      await admin(url, `drop database if exists ${dbName} with (force)`)
    })

    it('re-queues an expired lease within a fixed sweep interval, not a fraction of the worker lease', async () => {
      // The workers' lease is the default 10 s: sweeping a fraction of it apart would leave the run
      // seconds behind its dead owner's expiry; the successor must start within a few sweeps.
      worker = await startRunWorker({ connectionString: dbUrl, workflows: [quick], concurrency: 1 })
      const store = createPostgresRunStore({ connectionString: dbUrl, maxConnections: 2, migrate: false })
      const client = new pg.Client({ connectionString: dbUrl })
      await client.connect()
      try {
        const runId = 'orphaned-run'
        // A dead owner: it took the run's lease (for a second) and never wrote or heartbeat again.
        const dead = await store.acquireLease(runId, 'dead-worker', 1000)
        expect(dead).toBeDefined()
        await enqueueRun(client, { runId, workflow: quick.name })
        const lines = await until('the run to end', async () => {
          const { rows } = await client.query<{ status: string }>('select status from locus_runs where run_id = $1', [runId])
          if (rows[0]?.status !== 'completed') return undefined
          const journal = await client.query<{ line: JournalLine }>('select line from locus_journal where run_id = $1 and execution_id = $1 order by seq', [runId])
          return journal.rows.map((row) => row.line)
        })
        expect(lines.map((line) => line.type).slice(0, 2)).toEqual(['run_start', 'worker_takeover'])
        expect(lines[1]).toMatchObject({ type: 'worker_takeover', previousOwner: 'dead-worker', previousEpoch: dead?.epoch, epoch: (dead?.epoch ?? 0) + 1 })
        const successorStart = Date.parse(lines[0]?.ts ?? '')
        // Loose for a loaded machine; sweeping every half lease (5 s) would fail it.
        expect(successorStart - (dead?.expiresAt ?? Number.NaN)).toBeLessThan(2000)
      } finally {
        await client.end()
        await store.close()
      }
    })
  })
}
