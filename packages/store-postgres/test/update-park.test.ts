import type { JournalLine } from '@locus/journal'
import { createRuntime, defineWorkflow, rejectedUpdatesOf } from '@locus/runtime'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type RunWorker, createPostgresRunStore, enqueueRun, migrateDispatch, startRunWorker } from '../src/index.js'
import { admin, databaseUrl, until } from './pg-test-database.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL update tests: set LOCUS_TEST_PG_URL to run them')

/** Takes updates until told to stop: a parked run has only a message to wake it. */
const tally = defineWorkflow({
  name: 'tally',
  signals: { stop: z.null() },
  updates: { add: { input: z.object({ by: z.int() }), output: z.object({ total: z.int() }), validate: (input) => ((input as { by: number }).by < 0 ? 'no negative amounts' : undefined) } },
  async run({ onUpdate, waitForSignal }) {
    let total = 0
    onUpdate(
      'add',
      (input) => {
        total += (input as { by: number }).by
        return { total }
      },
      // A worker that wakes the run after a park runs the script again: completed updates rebuild the tally, not rerun.
      { restore: (_input, output) => (total = (output as { total: number }).total) },
    )
    await waitForSignal('stop')
    return { total }
  },
})

if (url !== undefined) {
  describe('updates to a run held by a PostgreSQL worker', () => {
    const dbName = `locus_update_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
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
      worker = await startRunWorker({ connectionString: dbUrl, workflows: [tally], concurrency: 2, leaseMs: 2000, parkAfterMs: 150 })
    })
    afterAll(async () => {
      await worker?.stop().catch(() => undefined)
      await client.end()
      await admin(url, `drop database if exists ${dbName} with (force)`)
    })

    it('reaches the worker (a parked run is woken), answers the handler result, and a rejected update leaves a parked run parked', async () => {
      const runId = 'tally-1'
      await enqueueRun(client, { runId, workflow: 'tally', input: null })
      await until(`${runId} to be parked`, async () => ((await status(runId)) === 'waiting' ? true : undefined), 15_000)
      const store = createPostgresRunStore({ connectionString: dbUrl, maxConnections: 2, migrate: false })
      try {
        const runtime = createRuntime({ workflows: [tally], store })
        // Refused: nothing journaled, and the parked run is not woken by its audit record.
        expect(await runtime.update(runId, 'add', { by: -1 }, { from: 'ops', via: 'api' })).toMatchObject({ ok: false, status: 'rejected', issues: ['no negative amounts'] })
        expect((await rejectedUpdatesOf(store, runId)).map((record) => record.stage)).toEqual(['validate'])
        await new Promise((resolve) => setTimeout(resolve, 300))
        expect(await status(runId)).toBe('waiting')
        // Accepted while parked: the put queues the run again, a worker runs the handler, the sender gets the result.
        const sentAt = performance.now()
        expect(await runtime.update(runId, 'add', { by: 2 }, { from: 'ops', via: 'api' }, { waitMs: 10_000 })).toMatchObject({ ok: true, status: 'completed', result: { total: 2 } })
        const parkedRoundTripMs = performance.now() - sentAt
        // Round trips on the run while a worker holds it (it re-parks after 150 ms idle, so some wake it again).
        const times: number[] = []
        for (let index = 0; index < 10; index += 1) {
          const at = performance.now()
          const answer = await runtime.update(runId, 'add', { by: 1 }, { from: 'ops', via: 'api' }, { waitMs: 10_000 })
          times.push(performance.now() - at)
          expect(answer).toMatchObject({ ok: true, status: 'completed' })
        }
        times.sort((left, right) => left - right)
        console.info(`update round trip on PostgreSQL: parked ${parkedRoundTripMs.toFixed(0)} ms; p50 ${times[5]?.toFixed(0) ?? '?'} ms, max ${times[9]?.toFixed(0) ?? '?'} ms over 10`)
        expect(parkedRoundTripMs).toBeLessThan(5_000)
        await runtime.signal(runId, 'stop', null)
        await until(`${runId} to end`, async () => ((await status(runId)) === 'completed' ? true : undefined), 10_000)
        const lines = await linesOf(runId)
        // Each accepted update journaled once across the executions (re-parks included), with its end; the rejected one not at all.
        expect(lines.filter((line) => line.type === 'update_received').map((line) => line.updateSeq)).toEqual([...Array.from({ length: 11 }, (_, index) => index)])
        expect(lines.filter((line) => line.type === 'update_completed')).toHaveLength(11)
        const end = lines.find((line) => line.type === 'run_end')
        expect(end?.type === 'run_end' ? end.result : null).toEqual({ total: 12 })
        expect(lines.flatMap((line) => (line.type === 'update_completed' ? [line.output] : []))).toEqual(
          Array.from({ length: 11 }, (_, index) => ({ total: index + 2 })),
        )
      } finally {
        await store.close()
      }
    })
  })
}
