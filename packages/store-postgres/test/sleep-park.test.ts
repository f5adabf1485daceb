import type { JournalLine } from '@locus/journal'
import { defineDeferredTool, defineTool, defineWorkflow } from '@locus/runtime'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type RunWorker, createPostgresRunStore, enqueueRun, migrateDispatch, requestCancel, startRunWorker } from '../src/index.js'
import { admin, databaseUrl, until } from './pg-test-database.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL sleep tests: set LOCUS_TEST_PG_URL to run them')
const LEASE_MS = 2000
const PARK_AFTER_MS = 150

const charges = new Map<string, number>()

/** Charges once, sleeps `ms`, and returns: the run parks during the sleep. */
const napper = defineWorkflow({
  name: 'napper',
  input: z.object({ ms: z.number() }),
  tools: {
    charge: defineTool({
      input: z.object({ runId: z.string() }),
      run: ({ runId }) => {
        charges.set(runId, (charges.get(runId) ?? 0) + 1)
        return { charged: true }
      },
    }),
  },
  async run({ tool, sleep, input, runId }) {
    await tool('charge', { runId })
    await sleep(input.ms)
    return { ok: true }
  },
})

/** Waits on a timer and on a deferral at once. */
const both = defineWorkflow({
  name: 'both',
  input: z.object({ ms: z.number() }),
  tools: { approve: defineDeferredTool({ input: z.object({}), output: z.object({ by: z.string() }) }) },
  async run({ tool, sleep, parallel, input }) {
    const [, approved] = await parallel([() => sleep(input.ms), () => tool('approve', {})])
    return { ok: true, by: approved.by }
  },
})

if (url !== undefined) {
  describe('a sleeping run parked on PostgreSQL holds no worker and wakes at its due time', () => {
    const dbName = `locus_sleep_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    const dbUrl = databaseUrl(url, dbName)
    let worker: RunWorker | undefined
    let client: pg.Client

    const status = async (runId: string): Promise<string | undefined> =>
      (await client.query<{ status: string }>('select status from locus_runs where run_id = $1', [runId])).rows[0]?.status
    const linesOf = async (runId: string): Promise<JournalLine[]> =>
      (await client.query<{ line: JournalLine }>('select line from locus_journal where run_id = $1 order by execution_id, seq', [runId])).rows.map((row) => row.line)
    const jobsOf = async (runId: string): Promise<{ key: string; runAt: Date; locked: boolean }[]> =>
      (
        await client.query<{ key: string; run_at: Date; locked: boolean }>(
          `select key, run_at, locked_by is not null as locked from graphile_worker.jobs where key = $1 or key like $1 || ':timer:%' order by key`,
          [runId],
        )
      ).rows.map((row) => ({ key: row.key, runAt: row.run_at, locked: row.locked }))
    const leaseOwner = async (runId: string): Promise<string | null | undefined> =>
      (await client.query<{ owner: string | null }>('select owner from locus_leases where run_id = $1', [runId])).rows[0]?.owner
    const parked = (runId: string) => until(`${runId} to be parked`, async () => ((await status(runId)) === 'waiting' && (await leaseOwner(runId)) === null ? true : undefined), 15_000)
    const ended = (runId: string) => until(`${runId} to end`, async () => {
      const now = await status(runId)
      return now === 'completed' || now === 'failed' || now === 'cancelled' ? now : undefined
    }, 20_000)
    const answer = async (runId: string, result: unknown): Promise<void> => {
      const open = (await linesOf(runId)).find((line) => line.type === 'deferred_open')
      const store = createPostgresRunStore({ connectionString: dbUrl, maxConnections: 2, migrate: false })
      try {
        await store.putDeferredAnswer(runId, open?.type === 'deferred_open' ? open.deferredId : '', JSON.stringify({ kind: 'resolved', result }))
      } finally {
        await store.close()
      }
    }

    beforeAll(async () => {
      await admin(url, `create database ${dbName}`)
      await migrateDispatch(dbUrl)
      client = new pg.Client({ connectionString: dbUrl })
      await client.connect()
      worker = await startRunWorker({ connectionString: dbUrl, workflows: [napper, both], concurrency: 2, leaseMs: LEASE_MS, parkAfterMs: PARK_AFTER_MS })
    })
    afterAll(async () => {
      await worker?.stop().catch(() => undefined)
      await client.end()
      await admin(url, `drop database if exists ${dbName} with (force)`)
    })

    it('parks the run with no lease and no job slot, one job per timer at its dueAt, and the job wakes it then', async () => {
      const runId = 'napper-1'
      await enqueueRun(client, { runId, workflow: 'napper', input: { ms: 2_500 } })
      await parked(runId)
      const start = (await linesOf(runId)).find((line) => line.type === 'timer_start')
      const dueAt = start?.type === 'timer_start' ? start.dueAt : ''
      // Before the fix the parked run was queued again at once: a job under its own key, running it over and over.
      expect(await jobsOf(runId)).toEqual([{ key: `${runId}:timer:timer-2`, runAt: new Date(dueAt), locked: false }])
      expect(await ended(runId)).toBe('completed')
      const lines = await linesOf(runId)
      const fired = lines.find((line) => line.type === 'timer_fired')
      expect(fired?.type === 'timer_fired' ? fired.lateMs : -1).toBeLessThan(1_000)
      expect(fired?.type === 'timer_fired' ? Date.parse(fired.firedAt) : 0).toBeGreaterThanOrEqual(Date.parse(dueAt))
      // Parked once, resumed once by its timer: one execution after the root.
      expect(lines.filter((line) => line.type === 'run_start').map((line) => line.executionId)).toEqual([runId, 'resume-001'])
      expect(charges.get(runId)).toBe(1)
      await until('its job to be done', async () => ((await jobsOf(runId)).length === 0 ? true : undefined), 5_000)
    })

    it('twenty sleeping runs hold no lease and no locked job while parked, and a worker started after the first stopped wakes them all', async () => {
      const runIds = Array.from({ length: 20 }, (_, index) => `fleet-${String(index)}`)
      // Long enough for all of them to park (two at a time) before the first one is due.
      for (const runId of runIds) await enqueueRun(client, { runId, workflow: 'napper', input: { ms: 5_000 } })
      await until('every run to be parked', async () => {
        const { rows } = await client.query<{ n: string }>(`select count(*) as n from locus_runs where status = 'waiting' and run_id like 'fleet-%'`)
        return Number(rows[0]?.n) === runIds.length ? true : undefined
      }, 15_000)
      const leased = await client.query(`select 1 from locus_leases where owner is not null and run_id like 'fleet-%'`)
      expect(leased.rowCount).toBe(0)
      // graphile-worker deletes a run's own job when its task returns, just after the park's transaction: wait for that, then check.
      const timerKeys = runIds.map((runId) => `${runId}:timer:timer-2`).sort()
      const jobsNow = async () => client.query<{ key: string; locked: boolean }>(`select key, locked_by is not null as locked from graphile_worker.jobs where key like 'fleet-%'`)
      await until('only the timer jobs to be left', async () => {
        const { rows } = await jobsNow()
        return rows.length === timerKeys.length ? true : undefined
      }, 5_000).catch(() => undefined)
      const jobs = await jobsNow()
      expect(jobs.rows.map((job) => job.key).sort()).toEqual(timerKeys)
      expect(jobs.rows.some((job) => job.locked)).toBe(false)
      // The worker that parked them goes away while they sleep; another one wakes them.
      await worker?.stop()
      worker = await startRunWorker({ connectionString: dbUrl, workflows: [napper, both], concurrency: 2, leaseMs: LEASE_MS, parkAfterMs: PARK_AFTER_MS })
      for (const runId of runIds) expect(await ended(runId)).toBe('completed')
      const fired = (await client.query<{ line: JournalLine }>(`select line from locus_journal where run_id like 'fleet-%' and line->>'type' = 'timer_fired'`)).rows.map((row) => row.line)
      expect(fired).toHaveLength(runIds.length)
      for (const line of fired) expect(line.type === 'timer_fired' ? line.lateMs : -1).toBeLessThan(2_000)
      for (const runId of runIds) expect(charges.get(runId)).toBe(1)
    })

    it('a run waiting on a timer and a deferral wakes on the answer when it comes first, and parks again on the rest of the timer', async () => {
      const runId = 'both-answer-first'
      await enqueueRun(client, { runId, workflow: 'both', input: { ms: 3_000 } })
      await parked(runId)
      const timer = (await linesOf(runId)).find((line) => line.type === 'timer_start')
      expect((await jobsOf(runId)).map((job) => job.key)).toEqual([`${runId}:timer:${timer?.type === 'timer_start' ? timer.timerId : ''}`])
      await answer(runId, { by: 'ana' })
      // The answer woke it long before the timer: the deferral settles in a resumed execution, then it parks on the timer.
      await until('the answer to be taken', async () => ((await linesOf(runId)).some((line) => line.type === 'deferred_settled') ? true : undefined), 10_000)
      const settledAt = Date.parse((await linesOf(runId)).find((line) => line.type === 'deferred_settled')?.ts ?? '')
      const start = (await linesOf(runId)).find((line) => line.type === 'timer_start')
      const dueAt = Date.parse(start?.type === 'timer_start' ? start.dueAt : '')
      expect(settledAt).toBeLessThan(dueAt)
      expect(await ended(runId)).toBe('completed')
      const lines = await linesOf(runId)
      expect(lines.find((line) => line.type === 'run_end')).toMatchObject({ disposition: 'completed', result: { ok: true, by: 'ana' } })
      const fired = lines.find((line) => line.type === 'timer_fired')
      expect(fired?.type === 'timer_fired' ? Date.parse(fired.firedAt) : 0).toBeGreaterThanOrEqual(dueAt)
    })

    it('a run waiting on a timer and a deferral wakes on the timer when it comes first, and parks again on the deferral', async () => {
      const runId = 'both-timer-first'
      await enqueueRun(client, { runId, workflow: 'both', input: { ms: 800 } })
      await until('the timer to fire', async () => ((await linesOf(runId)).some((line) => line.type === 'timer_fired') ? true : undefined), 10_000)
      await parked(runId)
      // Parked again on the deferral alone: nothing queued, an answer wakes it.
      await until('the timer job to be gone', async () => ((await jobsOf(runId)).length === 0 ? true : undefined), 5_000)
      await answer(runId, { by: 'bo' })
      expect(await ended(runId)).toBe('completed')
      const lines = await linesOf(runId)
      // Fired once, live; the execution the answer woke served it from the journal.
      expect(lines.filter((line) => line.type === 'timer_fired' && line.replayed !== true)).toHaveLength(1)
      expect(lines.find((line) => line.type === 'run_end')).toMatchObject({ result: { ok: true, by: 'bo' } })
    })
    it('a parked sleeping run that is cancelled ends cancelled, and its timer job goes with it rather than waiting for its due time', async () => {
      const runId = 'napper-cancelled'
      await enqueueRun(client, { runId, workflow: 'napper', input: { ms: 3_600_000 } })
      await parked(runId)
      expect((await jobsOf(runId)).map((job) => job.key)).toEqual([`${runId}:timer:timer-2`])
      expect(await requestCancel(client, runId, 'public', { reason: 'not needed', by: 'test' })).toBe(true)
      expect(await ended(runId)).toBe('cancelled')
      await until('its timer job to go', async () => ((await jobsOf(runId)).length === 0 ? true : undefined), 5_000)
    })

    it("wakes parked runs on time with the default lease, where graphile-worker's own poll would come seconds late", async () => {
      // With a 10 s lease graphile-worker polls every 2.5 s: a timer job found by that poll would be up to 2.5 s late.
      await worker?.stop()
      worker = await startRunWorker({ connectionString: dbUrl, workflows: [napper, both], concurrency: 4, leaseMs: 10_000, parkAfterMs: PARK_AFTER_MS })
      const runIds = Array.from({ length: 4 }, (_, index) => `on-time-${String(index)}`)
      for (const [index, runId] of runIds.entries()) await enqueueRun(client, { runId, workflow: 'napper', input: { ms: 1_500 + index * 317 } })
      for (const runId of runIds) expect(await ended(runId)).toBe('completed')
      for (const runId of runIds) {
        const lines = await linesOf(runId)
        // Each was parked and woken by its timer's job, not kept in memory.
        expect(lines.filter((line) => line.type === 'run_start')).toHaveLength(2)
        const fired = lines.find((line) => line.type === 'timer_fired')
        expect(fired?.type === 'timer_fired' ? fired.lateMs : -1, runId).toBeLessThan(400)
      }
    })
  })
}
