// One test body for a workflow's concurrency limits, run in process (createRuntime over a memory store) and on
// PostgreSQL workers (two workers sharing a database): the same limit holds on both.
import type { JournalLine, QueuedLine } from '@locus/journal'
import { createRuntime, defineTool, defineWorkflow } from '@locus/runtime'
import { createMemoryRunStore } from '@locus/store'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type RunWorker, enqueueRun, migrateDispatch, startRunWorker } from '../src/index.js'
import { admin, databaseUrl, testDatabaseUrl, until } from './pg-test-database.js'

const TENANT_LIMIT = 2
const GLOBAL_LIMIT = 3

/** How many runs hold the tool at once, per key, and the most ever seen. */
function tracker() {
  const now = new Map<string, number>()
  const most = new Map<string, number>()
  return {
    most,
    enter(keys: readonly string[]) {
      for (const key of keys) {
        const count = (now.get(key) ?? 0) + 1
        now.set(key, count)
        most.set(key, Math.max(most.get(key) ?? 0, count))
      }
    },
    leave(keys: readonly string[]) {
      for (const key of keys) now.set(key, (now.get(key) ?? 1) - 1)
    },
  }
}

function tenantWorkflow(seen: ReturnType<typeof tracker>) {
  return defineWorkflow({
    name: 'tenant-work',
    input: z.object({ tenant: z.string() }),
    concurrency: [
      { key: (input) => `tenant:${input.tenant}`, limit: TENANT_LIMIT },
      { key: () => 'global', limit: GLOBAL_LIMIT },
    ],
    tools: {
      work: defineTool({
        input: z.object({ tenant: z.string() }),
        run: async ({ tenant }) => {
          const keys = [`tenant:${tenant}`, 'global']
          seen.enter(keys)
          await new Promise((resolve) => setTimeout(resolve, 40))
          seen.leave(keys)
          return { done: true }
        },
      }),
    },
    async run({ tool, input }) {
      await tool('work', { tenant: input.tenant })
      return { ok: true }
    },
  })
}

/** Where the shared body starts runs and reads their journals. */
interface Launcher {
  start(runId: string, tenant: string): Promise<void>
  waitAll(runIds: readonly string[]): Promise<void>
  lines(runId: string): Promise<JournalLine[]>
}

const TENANTS = ['big', 'big', 'big', 'big', 'big', 'big', 'small-1', 'small-2']

async function limitHolds(launcher: Launcher, seen: ReturnType<typeof tracker>): Promise<void> {
  const runIds = TENANTS.map((tenant, index) => `run-${String(index)}-${tenant}`)
  // One after another: an enqueue is a transaction on the test's one client.
  for (const [index, runId] of runIds.entries()) await launcher.start(runId, TENANTS[index] ?? 'big')
  await launcher.waitAll(runIds)
  expect(seen.most.get('tenant:big')).toBeGreaterThanOrEqual(1)
  expect(seen.most.get('tenant:big')).toBeLessThanOrEqual(TENANT_LIMIT)
  expect(seen.most.get('global')).toBeLessThanOrEqual(GLOBAL_LIMIT)
  const queued = (await Promise.all(runIds.map((runId) => launcher.lines(runId)))).flatMap((lines) => lines.filter((line): line is QueuedLine => line.type === 'queued'))
  // Six big runs under a limit of two: some waited for a slot, and said so (keys and wait) right after run_start.
  expect(queued.length).toBeGreaterThan(0)
  for (const line of queued) {
    expect(line).toMatchObject({ reason: expect.stringMatching(/^(concurrency|priority)$/) as string })
    expect(line.keys.includes('global')).toBe(true)
  }
  expect(queued.some((line) => line.reason === 'concurrency')).toBe(true)
}

describe('a concurrency limit', () => {
  it('holds in process', async () => {
    const seen = tracker()
    const store = createMemoryRunStore()
    const runtime = createRuntime({ store, workflows: [tenantWorkflow(seen)] })
    const done: Promise<unknown>[] = []
    await limitHolds(
      {
        start: async (runId, tenant) => {
          // In process a start resolves once the run holds its slot: the queue is the pending start.
          done.push(runtime.start('tenant-work', { runId, input: { tenant } }).then((handle) => handle.done))
          await Promise.resolve()
        },
        waitAll: async () => {
          await Promise.all(done)
        },
        lines: async (runId) => {
          const run = await runtime.get(runId)
          const lines: JournalLine[] = []
          for await (const line of store.readLines(run.latest.info)) lines.push(line)
          return lines
        },
      },
      seen,
    )
  })

  const url = testDatabaseUrl
  describe.skipIf(url === undefined)('on PostgreSQL workers', () => {
    const dbName = `locus_flow_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    const dbUrl = url === undefined ? '' : databaseUrl(url, dbName)
    const workers: RunWorker[] = []
    let client: pg.Client

    beforeAll(async () => {
      if (url === undefined) return
      await admin(url, `create database ${dbName}`)
      await migrateDispatch(dbUrl)
      client = new pg.Client({ connectionString: dbUrl })
      await client.connect()
    })
    afterAll(async () => {
      if (url === undefined) return
      await Promise.all(workers.map((worker) => worker.stop().catch(() => undefined)))
      await client.end()
      await admin(url, `drop database if exists ${dbName} with (force)`)
    })

    it('holds across two workers, counted on live leases', async () => {
      const seen = tracker()
      const workflow = tenantWorkflow(seen)
      // The workers start once every run is queued: on a loaded machine a run enqueued one by one could finish
      // before the next is enqueued, and no run would ever have to wait for a slot.
      const startWorkers = async () => {
        for (let index = 0; index < 2; index += 1) workers.push(await startRunWorker({ connectionString: dbUrl, workflows: [workflow], concurrency: 4, leaseMs: 2000 }))
      }
      // Audits the lease rows while the runs go: no moment where a key has more live leases than its limit.
      const auditState = { auditing: true }
      let worst = 0
      const auditor = new pg.Client({ connectionString: dbUrl })
      await auditor.connect()
      const audit = (async () => {
        while (auditState.auditing) {
          const { rows } = await auditor.query<{ key: string; lim: number; n: string }>(
            `select k.key, max(k.lim) as lim, count(*) as n from locus_run_keys k join locus_leases l on l.run_id = k.run_id join locus_runs r on r.run_id = k.run_id
             where l.owner is not null and r.status = 'running' group by k.key`,
          )
          for (const row of rows) {
            expect(Number(row.n)).toBeLessThanOrEqual(row.lim)
            if (row.key === 'tenant:big') worst = Math.max(worst, Number(row.n))
          }
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
      })()
      try {
      await limitHolds(
        {
          start: (runId, tenant) => enqueueRun(client, { runId, workflow: workflow, input: { tenant } }),
          waitAll: async (runIds) => {
            await startWorkers()
            await until(
              'every run to complete',
              async () => {
                const { rows } = await client.query<{ n: string }>(`select count(*) as n from locus_runs where run_id = any($1::text[]) and status = 'completed'`, [[...runIds]])
                return Number(rows[0]?.n) === runIds.length ? true : undefined
              },
              20_000,
            )
          },
          lines: async (runId) =>
            (await client.query<{ line: JournalLine }>('select line from locus_journal where run_id = $1 order by execution_id, seq', [runId])).rows.map((row) => row.line),
        },
        seen,
      )
      } finally {
        auditState.auditing = false
        await audit.catch(() => undefined)
        await auditor.end()
      }
      await audit
      expect(worst).toBeLessThanOrEqual(TENANT_LIMIT)
      // Waiting spent no attempt: every run ran its tool once, in its first execution.
      const { rows } = await client.query<{ n: string }>(`select count(*) as n from locus_executions where kind <> 'root'`)
      expect(Number(rows[0]?.n)).toBe(0)
    })

    it('refuses an enqueue whose key function fails, and queues nothing', async () => {
      const throwing = defineWorkflow({
        name: 'bad-key',
        concurrency: [{ key: () => undefined as unknown as string, limit: 1 }],
        run: () => ({ ok: true }),
      })
      await expect(enqueueRun(client, { runId: 'bad-key-run', workflow: throwing, input: {} })).rejects.toMatchObject({ code: 'CONCURRENCY_KEY_INVALID' })
      expect((await client.query(`select 1 from locus_runs where run_id = 'bad-key-run'`)).rowCount).toBe(0)
      expect((await client.query(`select 1 from graphile_worker.jobs where key = 'bad-key-run'`)).rowCount).toBe(0)
    })
  })
})
