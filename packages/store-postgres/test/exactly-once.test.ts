// Exactly once on PostgreSQL (issue #37): a holder whose lease was taken starts nothing, a job for an
// ended run does nothing, and only an explicit resume continues a failed one.
import type { JournalLine } from '@locus/journal'
import { RunCompletedError, defineTool, defineWorkflow, runWorkflowScript } from '@locus/runtime'
import { LeaseLostError } from '@locus/store'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { type RunWorker, RUN_TASK, createDispatchRuntime, createPostgresRunStore, enqueueRun, migrateDispatch, startRunWorker } from '../src/index.js'
import { admin, databaseUrl, until } from './pg-test-database.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL exactly-once test: set LOCUS_TEST_PG_URL to run it')

/** What tools really did, outside the journal. */
const ledger: string[] = []

const quick = defineWorkflow({
  name: 'quick',
  tools: { step: defineTool({ input: z.object({ runId: z.string() }), run: ({ runId }) => (ledger.push(`step ${runId}`), { done: true }) }) },
  async run({ tool, runId }) {
    await tool('step', { runId })
    return { ok: true }
  },
})

const failing = defineWorkflow({
  name: 'failing',
  tools: {
    boom: defineTool({
      input: z.object({ runId: z.string() }),
      run: ({ runId }) => {
        ledger.push(`boom ${runId}`)
        throw new Error('the tool failed')
      },
    }),
  },
  async run({ tool, runId }) {
    await tool('boom', { runId })
    return { ok: true }
  },
})

if (url !== undefined) {
  describe('exactly once on PostgreSQL', () => {
    const dbName = `locus_once_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    const dbUrl = databaseUrl(url, dbName)
    const client = new pg.Client({ connectionString: dbUrl })
    let worker: RunWorker | undefined

    beforeAll(async () => {
      await admin(url, `create database ${dbName}`)
      await migrateDispatch(dbUrl)
      await client.connect()
    })
    afterAll(async () => {
      await worker?.stop()
      await client.end()
      await admin(url, `drop database if exists ${dbName} with (force)`)
    })

    async function linesOf(runId: string): Promise<JournalLine[]> {
      const { rows } = await client.query<{ line: JournalLine }>('select line from locus_journal where run_id = $1 order by execution_id, seq', [runId])
      return rows.map((row) => row.line)
    }

    it('a holder whose lease was taken over starts no further call: its next start line does not commit, so the tool never runs', async () => {
      const store = createPostgresRunStore({ connectionString: dbUrl, maxConnections: 4, migrate: false })
      try {
        const runId = 'stale-holder'
        const lease = await store.acquireLease(runId, 'worker-a', 60_000)
        if (lease === undefined) throw new Error('no lease')
        let release: () => void = () => undefined
        const gate = new Promise<void>((resolve) => {
          release = resolve
        })
        let entered: () => void = () => undefined
        const inFirst = new Promise<void>((resolve) => {
          entered = resolve
        })
        const ran: string[] = []
        const flow = defineWorkflow({
          name: 'two',
          tools: {
            first: defineTool({ input: z.object({}), run: async () => (ran.push('first'), entered(), await gate, { done: true }) }),
            second: defineTool({ input: z.object({}), run: () => (ran.push('second'), { done: true }) }),
          },
          async run({ tool }) {
            await tool('first', {})
            await tool('second', {})
            return { ok: true }
          },
        })
        const running = runWorkflowScript(flow, { store: store.fenced(lease), runId }).catch((error: unknown) => error)
        await inFirst
        // The holder stalls past its lease (a pause, a partition) and another worker takes the run.
        await client.query("update locus_leases set expires_at = clock_timestamp() - interval '1 second' where run_id = $1", [runId])
        const successor = await store.acquireLease(runId, 'worker-b', 60_000)
        expect(successor?.epoch).toBe(lease.epoch + 1)
        release()
        const outcome = await running
        // The call in flight at the takeover finished, but the next one never started.
        expect(ran).toEqual(['first'])
        const types = (await linesOf(runId)).map((line) => (line.type === 'tool_start' ? `tool_start ${line.tool}` : line.type))
        expect(types).not.toContain('tool_start second')
        const failed = outcome instanceof Error ? outcome : (outcome as { error?: { code?: string } }).error
        expect(JSON.stringify(failed)).toMatch(/LEASE_LOST|lease/i)
      } finally {
        await store.close()
      }
    })

    it('a job delivered again for a completed or failed run does nothing; an explicit resume of the failed one runs it, of the completed one is refused', async () => {
      const warnings = vi.spyOn(console, 'warn')
      worker = await startRunWorker({ connectionString: dbUrl, workflows: [quick, failing], concurrency: 2, leaseMs: 1000 })
      // graphile-worker was given a pool with both error listeners: it warns about none.
      expect(warnings.mock.calls.map((call) => String(call[0])).filter((message) => /error handlers/.test(message))).toEqual([])
      warnings.mockRestore()
      const store = createPostgresRunStore({ connectionString: dbUrl, maxConnections: 2, migrate: false })
      const runtime = await createDispatchRuntime({ connectionString: dbUrl, workflows: [quick, failing], pollMs: 20 })
      try {
        await enqueueRun(client, { runId: 'done-run', workflow: 'quick' })
        await enqueueRun(client, { runId: 'failed-run', workflow: 'failing' })
        for (const [runId, status] of [
          ['done-run', 'completed'],
          ['failed-run', 'failed'],
        ] as const) {
          await until(`${runId} to end`, async () => ((await client.query<{ status: string }>('select status from locus_runs where run_id = $1', [runId])).rows[0]?.status === status ? true : undefined))
        }
        const before = { done: await linesOf('done-run'), failed: await linesOf('failed-run'), ledger: [...ledger] }
        // Delivered again (the worker died after run_end committed, before the job was marked done).
        for (const runId of ['done-run', 'failed-run']) {
          await client.query(`select graphile_worker.add_job($1, json_build_object('runId', $2::text), job_key := $2::text)`, [RUN_TASK, runId])
        }
        await until('the redelivered jobs to be taken and completed', async () =>
          (await client.query('select 1 from graphile_worker.jobs where key in ($1, $2)', ['done-run', 'failed-run'])).rowCount === 0 ? true : undefined,
        )
        // Nothing holds the ended runs afterwards (a lease left to expire would make a sweeper queue them again).
        const { rows: held } = await client.query<{ run_id: string }>("select run_id from locus_leases where run_id in ('done-run', 'failed-run') and owner is not null")
        expect(held).toEqual([])
        expect(await linesOf('done-run')).toEqual(before.done)
        expect(await linesOf('failed-run')).toEqual(before.failed)
        expect(ledger).toEqual(before.ledger)
        expect((await store.listExecutions('done-run')).map((info) => info.executionId)).toEqual(['done-run'])

        // An explicit resume of the completed run is refused under the run row's lock, and queues nothing.
        await expect(runtime.resume('done-run')).rejects.toSatisfy((error: unknown) => RunCompletedError.isInstance(error))
        expect((await client.query('select 1 from graphile_worker.jobs where key = $1', ['done-run'])).rowCount).toBe(0)
        // One of the failed run runs its failed call again, in a new execution.
        const handle = await runtime.resume('failed-run')
        expect((await handle.done).disposition).toBe('failed')
        expect((await store.listExecutions('failed-run')).map((info) => info.executionId)).toEqual(['failed-run', 'resume-001'])
        expect(ledger.filter((entry) => entry === 'boom failed-run')).toHaveLength(2)
      } finally {
        await runtime.close()
        await store.close()
      }
    })

    it('a commit whose lease moved on throws LeaseLostError from beforeDispatch', async () => {
      const store = createPostgresRunStore({ connectionString: dbUrl, maxConnections: 2, migrate: false })
      try {
        const lease = await store.acquireLease('fenced-writer', 'worker-a', 60_000)
        if (lease === undefined) throw new Error('no lease')
        const writer = await store.fenced(lease).createExecution({ runId: 'fenced-writer', kind: 'root' })
        writer.append({ type: 'log', level: 'info', message: 'before' })
        await writer.beforeDispatch?.()
        await client.query("update locus_leases set expires_at = clock_timestamp() - interval '1 second' where run_id = $1", ['fenced-writer'])
        await store.acquireLease('fenced-writer', 'worker-b', 60_000)
        writer.append({ type: 'log', level: 'info', message: 'after' })
        await expect(writer.beforeDispatch?.()).rejects.toSatisfy((error: unknown) => LeaseLostError.isInstance(error))
        expect((await linesOf('fenced-writer')).map((line) => (line.type === 'log' ? line.message : line.type))).toEqual(['before'])
      } finally {
        await store.close()
      }
    })
  })
}
