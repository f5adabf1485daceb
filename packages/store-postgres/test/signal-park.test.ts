import type { JournalLine } from '@locus/journal'
import { createRuntime, defineWorkflow } from '@locus/runtime'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type RunWorker, createPostgresRunStore, enqueueRun, migrateDispatch, startRunWorker } from '../src/index.js'
import { admin, databaseUrl, until } from './pg-test-database.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL signal tests: set LOCUS_TEST_PG_URL to run them')

/** Waits for one signal, with no timeout: a parked run has only the signal to wake it. */
const listener = defineWorkflow({
  name: 'listener',
  signals: { go: z.object({ by: z.string() }) },
  queries: { received: (view) => view.signals().length },
  async run({ waitForSignal }) {
    return { ok: true, got: await waitForSignal('go') }
  },
})

if (url !== undefined) {
  describe('a run parked on PostgreSQL while it waits for a signal', () => {
    const dbName = `locus_signal_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    const dbUrl = databaseUrl(url, dbName)
    let worker: RunWorker | undefined
    let client: pg.Client

    const status = async (runId: string): Promise<string | undefined> =>
      (await client.query<{ status: string }>('select status from locus_runs where run_id = $1', [runId])).rows[0]?.status
    const linesOf = async (runId: string): Promise<JournalLine[]> =>
      (await client.query<{ line: JournalLine }>('select line from locus_journal where run_id = $1 order by execution_id, seq', [runId])).rows.map((row) => row.line)

    beforeAll(async () => {
      await admin(url, `create database ${dbName}`)
      await migrateDispatch(dbUrl)
      client = new pg.Client({ connectionString: dbUrl })
      await client.connect()
      worker = await startRunWorker({ connectionString: dbUrl, workflows: [listener], concurrency: 2, leaseMs: 2000, parkAfterMs: 150 })
    })
    afterAll(async () => {
      await worker?.stop().catch(() => undefined)
      await client.end()
      await admin(url, `drop database if exists ${dbName} with (force)`)
    })

    it('stays parked (not re-queued over and over), wakes on the signal, takes it once and completes; the query answers from the store', async () => {
      const runId = 'listener-1'
      await enqueueRun(client, { runId, workflow: 'listener', input: null })
      await until(`${runId} to be parked`, async () => ((await status(runId)) === 'waiting' ? true : undefined), 15_000)
      // Still parked a while later: a run waiting on a signal is not something with nothing to wake it.
      await new Promise((resolve) => setTimeout(resolve, 400))
      expect(await status(runId)).toBe('waiting')
      const store = createPostgresRunStore({ connectionString: dbUrl, maxConnections: 2, migrate: false })
      try {
        const runtime = createRuntime({ workflows: [listener], store })
        const sentAt = performance.now()
        expect(await runtime.signal(runId, 'go', { by: 'ana' }, { from: 'ops', via: 'api' })).toMatchObject({ ok: true, signalSeq: 0 })
        await until(`${runId} to end`, async () => ((await status(runId)) === 'completed' ? true : undefined), 10_000)
        const wokeMs = performance.now() - sentAt
        // The target: a parked run moves again within a second of its signal.
        expect(wokeMs).toBeLessThan(5_000)
        const lines = await linesOf(runId)
        expect(lines.filter((line) => line.type === 'signal_received')).toHaveLength(1)
        const end = lines.find((line) => line.type === 'run_end')
        expect(end?.type === 'run_end' ? end.result : null).toEqual({ ok: true, got: { by: 'ana' } })
        expect(await runtime.query(runId, 'received')).toEqual({ ok: true, result: 1 })
      } finally {
        await store.close()
      }
    })
  })
}
