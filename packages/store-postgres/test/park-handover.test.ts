import type { JournalLine } from '@locus/journal'
import { createRuntime, defineDeferredTool, defineTool, defineWorkflow } from '@locus/runtime'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type RunWorker, createPostgresRunStore, enqueueRun, migrateDispatch, requestCancel, startRunWorker } from '../src/index.js'
import { admin, databaseUrl, until } from './pg-test-database.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL park and hand-over tests: set LOCUS_TEST_PG_URL to run them')
// Long enough that a loaded CI machine does not lapse a live worker's lease between heartbeats.
const LEASE_MS = 2000

// Side effects are counted here, outside the journal: both workers of a test run in this process.
const charges = new Map<string, number>()
const steps = new Map<number, number>()

const approval = defineWorkflow({
  name: 'approval',
  tools: {
    charge: defineTool({
      input: z.object({ runId: z.string() }),
      run: ({ runId }) => {
        charges.set(runId, (charges.get(runId) ?? 0) + 1)
        return { charged: true }
      },
    }),
    approve: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean(), by: z.string() }) }),
  },
  async run({ tool, runId }) {
    const charged = await tool('charge', { runId })
    const answer = await tool('approve', { amount: 10 })
    return { ok: charged.charged && answer.approved, by: answer.by }
  },
})

const quick = defineWorkflow({
  name: 'quick',
  tools: { step: defineTool({ input: z.object({}), run: () => ({ done: true }) }) },
  async run({ tool }) {
    await tool('step', {})
    return { ok: true }
  },
})

const loop = defineWorkflow({
  name: 'loop',
  input: z.object({ rounds: z.number().int() }),
  tools: {
    step: defineTool({
      input: z.object({ round: z.number() }),
      run: async ({ round }) => {
        steps.set(round, (steps.get(round) ?? 0) + 1)
        await new Promise((resolve) => setTimeout(resolve, 60))
        return { round }
      },
    }),
  },
  async run({ tool, input }) {
    let sum = 0
    for (let round = 0; round < input.rounds; round += 1) sum += (await tool('step', { round })).round
    return { ok: true, sum }
  },
})

if (url !== undefined) {
  describe('a waiting run parked, and a stopping worker handing its runs over', () => {
    const dbName = `locus_park_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    const dbUrl = databaseUrl(url, dbName)
    const workers: RunWorker[] = []
    let client: pg.Client

    const status = async (runId: string): Promise<string | undefined> =>
      (await client.query<{ status: string }>('select status from locus_runs where run_id = $1', [runId])).rows[0]?.status
    const linesOf = async (runId: string): Promise<JournalLine[]> =>
      (await client.query<{ line: JournalLine }>('select line from locus_journal where run_id = $1 order by execution_id, seq', [runId])).rows.map((row) => row.line)
    const start = async (parkAfterMs = 300): Promise<RunWorker> => {
      const worker = await startRunWorker({ connectionString: dbUrl, workflows: [approval, quick, loop], concurrency: 1, leaseMs: LEASE_MS, parkAfterMs })
      workers.push(worker)
      return worker
    }

    beforeAll(async () => {
      await admin(url, `create database ${dbName}`)
      await migrateDispatch(dbUrl)
      client = new pg.Client({ connectionString: dbUrl })
      await client.connect()
    })
    afterAll(async () => {
      await Promise.all(workers.map((worker) => worker.stop().catch(() => undefined)))
      await client.end()
      await admin(url, `drop database if exists ${dbName} with (force)`)
    })

    it('refuses a parkAfterMs that is not a whole number of milliseconds', async () => {
      await expect(startRunWorker({ connectionString: dbUrl, workflows: [quick], parkAfterMs: -1 })).rejects.toThrow(/parkAfterMs/)
      await expect(startRunWorker({ connectionString: dbUrl, workflows: [quick], parkAfterMs: 1.5 })).rejects.toThrow(/parkAfterMs/)
    })

    it('parks a run that only waits: its lease and slot are freed, and the answer queues it again', async () => {
      const worker = await start()
      const runId = 'parked-run'
      await enqueueRun(client, { runId, workflow: 'approval' })
      await until('the run to be parked', async () => ((await status(runId)) === 'waiting' ? true : undefined))
      const lease = (await client.query<{ owner: string | null }>('select owner from locus_leases where run_id = $1', [runId])).rows[0]
      expect(lease?.owner).toBeNull()
      // Its job is done: nothing is locked, nothing queued for it.
      expect((await client.query('select 1 from graphile_worker.jobs where locked_by is not null')).rowCount).toBe(0)
      expect((await client.query('select 1 from graphile_worker.jobs where key = $1', [runId])).rowCount).toBe(0)
      const parkedLines = await linesOf(runId)
      expect(parkedLines.some((line) => line.type === 'run_end')).toBe(false)
      expect(parkedLines.find((line) => line.type === 'log' && line.message.includes('parked'))).toMatchObject({ level: 'info', data: { suspended: true } })

      // The concurrency-1 worker's slot is free meanwhile.
      await enqueueRun(client, { runId: 'quick-run', workflow: 'quick' })
      await until('the other run to complete', async () => ((await status('quick-run')) === 'completed' ? true : undefined), 10_000)
      expect(await status(runId)).toBe('waiting')

      const store = createPostgresRunStore({ connectionString: dbUrl, maxConnections: 2, migrate: false })
      try {
        const runtime = createRuntime({ store, workflows: [approval] })
        const [pending] = await runtime.pendingDeferrals(runId)
        expect(pending?.tool).toBe('approve')
        expect(await runtime.answerDeferred(runId, pending?.deferredId ?? '', { kind: 'resolved', result: { approved: true, by: 'ana' } })).toMatchObject({ ok: true, status: 'stored' })
        expect(await status(runId)).toBe('running')
        await until('the answered run to complete', async () => ((await status(runId)) === 'completed' ? true : undefined), 15_000)
        const stored = await runtime.get(runId)
        expect(stored.latest.view.runEnd).toMatchObject({ disposition: 'completed', result: { ok: true, by: 'ana' } })
        expect(stored.latest.info.executionId).toBe('resume-001')
      } finally {
        await store.close()
      }
      const lines = await linesOf(runId)
      expect(charges.get(runId)).toBe(1)
      expect(lines.filter((line) => line.type === 'deferred_open')).toHaveLength(1)
      expect(lines.filter((line) => line.type === 'run_end').map((line) => line.disposition)).toEqual(['completed'])
      // The resume took the released lease afresh: no takeover of a live holder.
      expect(lines.some((line) => line.type === 'worker_takeover')).toBe(false)
      await worker.stop()
      workers.splice(workers.indexOf(worker), 1)
    })

    it('answers a parked run through the store alone (putDeferredAnswer), as locus resolve does', async () => {
      const worker = await start()
      const runId = 'parked-run-2'
      await enqueueRun(client, { runId, workflow: 'approval' })
      await until('the run to be parked', async () => ((await status(runId)) === 'waiting' ? true : undefined))
      const open = (await linesOf(runId)).find((line) => line.type === 'deferred_open')
      const store = createPostgresRunStore({ connectionString: dbUrl, maxConnections: 2, migrate: false })
      try {
        await store.putDeferredAnswer(runId, open?.type === 'deferred_open' ? open.deferredId : '', JSON.stringify({ kind: 'resolved', result: { approved: true, by: 'bo' } }))
      } finally {
        await store.close()
      }
      await until('the answered run to complete', async () => ((await status(runId)) === 'completed' ? true : undefined), 15_000)
      expect(charges.get(runId)).toBe(1)
      await worker.stop()
      workers.splice(workers.indexOf(worker), 1)
    })

    it('cancels a parked run on request: it is queued again and a worker ends it cancelled', async () => {
      const worker = await start()
      const runId = 'parked-then-cancelled'
      await enqueueRun(client, { runId, workflow: 'approval' })
      await until('the run to be parked', async () => ((await status(runId)) === 'waiting' ? true : undefined))
      expect(await requestCancel(client, runId)).toBe(true)
      await until('the run to end cancelled', async () => ((await status(runId)) === 'cancelled' ? true : undefined), 15_000)
      const lines = await linesOf(runId)
      expect(lines.filter((line) => line.type === 'run_end').map((line) => line.disposition)).toEqual(['cancelled'])
      expect(charges.get(runId)).toBe(1)
      await worker.stop()
      workers.splice(workers.indexOf(worker), 1)
    })

    it('hands a run over on a graceful stop: another worker finishes it, nothing is cancelled and no completed call runs twice', async () => {
      steps.clear()
      const first = await start()
      const runId = 'handed-over'
      const rounds = 30
      await enqueueRun(client, { runId, workflow: 'loop', input: { rounds } })
      await until('a few rounds', async () => ((await linesOf(runId)).filter((line) => line.type === 'tool_end').length >= 4 ? true : undefined))
      const second = await start()
      const stopping = Date.now()
      await first.stop()
      workers.splice(workers.indexOf(first), 1)
      // The stop hands over at once: it does not wait for the run, or for a lease to lapse.
      expect(Date.now() - stopping).toBeLessThan(LEASE_MS * 2)
      // Its own job is done, not left locked by the stopped worker: only the one queued for the successor remains.
      const jobs = await client.query<{ key: string | null }>('select key from graphile_worker.jobs')
      expect(jobs.rows.map((job) => job.key)).toEqual([runId])
      await until('the run to complete', async () => ((await status(runId)) === 'completed' ? true : undefined), 30_000)
      const lines = await linesOf(runId)
      const end = lines.find((line) => line.type === 'run_end')
      expect(end).toMatchObject({ disposition: 'completed', result: { ok: true, sum: (rounds * (rounds - 1)) / 2 } })
      expect(lines.filter((line) => line.type === 'run_end')).toHaveLength(1)
      expect(lines.some((line) => line.type === 'log' && line.message.includes('is stopping'))).toBe(true)
      // The lease was released, not left to lapse: the successor took it afresh, with no takeover.
      expect(lines.some((line) => line.type === 'worker_takeover')).toBe(false)
      expect(lines.filter((line) => line.type === 'lease_acquired').length).toBeGreaterThanOrEqual(2)
      // Every round whose tool_end completed live before the stop ran once; only the one in flight may have run again.
      const completedBefore = new Set(
        lines.flatMap((line) => (line.type === 'tool_end' && line.executionId === runId && line.status === 'completed' && line.replayed !== true ? [line.toolCallId] : [])),
      )
      expect(completedBefore.size).toBeGreaterThanOrEqual(4)
      for (let round = 0; round < rounds; round += 1) expect(steps.get(round)).toBeGreaterThanOrEqual(1)
      const twice = [...steps.entries()].filter(([, count]) => count > 1).map(([round]) => round)
      expect(twice.length).toBeLessThanOrEqual(1)
      for (const round of twice) expect(round).toBeGreaterThanOrEqual(completedBefore.size)
      await second.stop()
      workers.splice(workers.indexOf(second), 1)
    })
  })
}
