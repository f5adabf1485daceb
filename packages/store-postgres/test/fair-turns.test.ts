// Fair turns between tenants on PostgreSQL workers: a tenant with a big
// backlog does not hold back tenants who queue a few runs after it, and no
// key ever runs more runs than its limit (an audit of the lease rows while the
// runs go). The full-size soak (2,000 runs, four worker processes, calls that
// wait 200 ms) is in bench/flow.bench.ts; this is its CI size.
import { defineTool, defineWorkflow } from '@locus/runtime'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { admit } from '../src/flow.js'
import { type RunWorker, enqueueRun, migrateDispatch, startRunWorker } from '../src/index.js'
import { RUN_TASK } from '../src/run-task.js'
import { admin, databaseUrl, testDatabaseUrl, until } from './pg-test-database.js'

// Below the two workers' eight slots, so the limit binds (the audit has something to catch), and above half of
// them, so first come first served would fill the workers with the big tenant's runs.
const TENANT_LIMIT = 6
const BIG_RUNS = 48
const SMALL_TENANTS = 3
const SMALL_RUNS = 3

const tenantWork = defineWorkflow({
  name: 'tenant-io',
  input: z.object({ tenant: z.string() }),
  concurrency: [{ key: (input) => `tenant:${input.tenant}`, limit: TENANT_LIMIT }],
  tools: {
    call: defineTool({
      input: z.object({}),
      // Waits like a model call does: the run holds its slot while nothing runs on the CPU.
      run: async () => {
        await new Promise((resolve) => setTimeout(resolve, 30))
        return { done: true }
      },
    }),
  },
  async run({ tool }) {
    await tool('call', {})
    return { ok: true }
  },
})

const url = testDatabaseUrl
describe.skipIf(url === undefined)('fair turns between tenants on PostgreSQL workers', () => {
  const dbName = `locus_fair_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
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

  it('a big backlog queued first does not hold back small tenants queued after it, and no key exceeds its limit', async () => {
    // The big tenant queues its whole backlog first; then each small tenant queues a few. All are queued
    // before any worker starts, so the order of starts is the queue's doing alone.
    for (let index = 0; index < BIG_RUNS; index += 1) await enqueueRun(client, { runId: `big-${String(index)}`, workflow: tenantWork, input: { tenant: 'big' } })
    const small: string[] = []
    for (let tenant = 0; tenant < SMALL_TENANTS; tenant += 1) {
      for (let index = 0; index < SMALL_RUNS; index += 1) {
        const runId = `small-${String(tenant)}-${String(index)}`
        small.push(runId)
        await enqueueRun(client, { runId, workflow: tenantWork, input: { tenant: `small-${String(tenant)}` } })
      }
    }
    const auditor = new pg.Client({ connectionString: dbUrl })
    await auditor.connect()
    const audit = { going: true, worst: 0, samples: 0 }
    const auditing = (async () => {
      while (audit.going) {
        const { rows } = await auditor.query<{ key: string; lim: number; n: string }>(
          `select k.key, max(k.lim) as lim, count(*) as n from locus_run_keys k join locus_leases l on l.run_id = k.run_id join locus_runs r on r.run_id = k.run_id
           where l.owner is not null and r.status = 'running' group by k.key`,
        )
        audit.samples += 1
        for (const row of rows) audit.worst = Math.max(audit.worst, Number(row.n) - row.lim)
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    })()
    try {
      for (let index = 0; index < 2; index += 1) workers.push(await startRunWorker({ connectionString: dbUrl, workflows: [tenantWork], concurrency: 4, leaseMs: 5000 }))
      const total = BIG_RUNS + small.length
      await until(
        'every run to complete',
        async () => {
          const { rows } = await client.query<{ n: string }>(`select count(*) as n from locus_runs where status = 'completed'`)
          return Number(rows[0]?.n) === total ? true : undefined
        },
        60_000,
      )
    } finally {
      audit.going = false
      await auditing
      await auditor.end()
    }
    // No moment where a key held more live leases than its limit.
    expect(audit.samples).toBeGreaterThan(0)
    expect(audit.worst).toBeLessThanOrEqual(0)
    // The order runs were admitted in: every small tenant's runs start among the first turns, not behind the
    // big backlog. Each turn admits at most one run per tenant, so at most SMALL_RUNS of the big tenant's runs
    // (plus the slots a worker fills before it reads the turns) start before the last small run does.
    const { rows } = await client.query<{ run_id: string }>(`select run_id from locus_runs order by admitted_at, run_id`)
    const order = rows.map((row) => row.run_id)
    expect(order).toHaveLength(BIG_RUNS + small.length)
    const lastSmall = Math.max(...small.map((runId) => order.indexOf(runId)))
    const bigBefore = order.slice(0, lastSmall).filter((runId) => runId.startsWith('big-')).length
    // First come, first served would start all 48 big runs first; fair turns start a handful.
    expect(bigBefore).toBeLessThanOrEqual(SMALL_RUNS + 4)
    // Within a tenant, first come first served still holds.
    const bigOrder = order.filter((runId) => runId.startsWith('big-')).map((runId) => Number(runId.slice('big-'.length)))
    expect(bigOrder).toEqual([...bigOrder].sort((left, right) => left - right))
  })
  it('a lease past its expiry still holds its slot while its run runs; an ended run holds none', async () => {
    // Admission itself, with no worker running: a lease aged by hand stands for a holder late with its heartbeat.
    await Promise.all(workers.splice(0).map((worker) => worker.stop()))
    const oneAtATime = defineWorkflow({ name: 'one-at-a-time', concurrency: [{ key: () => 'late', limit: 1 }], run: () => ({ ok: true }) })
    for (const runId of ['late-a', 'late-b']) await enqueueRun(client, { runId, workflow: oneAtATime })
    const admitted = (runId: string) => admit(client, 'public', { runId, owner: 'worker-1', leaseMs: 60_000, task: RUN_TASK })
    expect(await admitted('late-a')).toMatchObject({ kind: 'leased', runId: 'late-a' })
    await client.query(`update locus_leases set expires_at = clock_timestamp() - interval '1 second' where run_id = 'late-a'`)
    // Its holder may still renew it (nobody took it over), so the slot is still taken: b waits, for concurrency.
    expect(await admitted('late-b')).toEqual({ kind: 'parked' })
    expect((await client.query<{ reason: string }>(`select queued_reason as reason from locus_runs where run_id = 'late-b'`)).rows[0]?.reason).toBe('concurrency')
    // Once a's run has ended, its lease left behind (a worker killed before releasing it) holds nothing.
    await client.query(`update locus_runs set status = 'completed' where run_id = 'late-a'`)
    expect(await admitted('late-b')).toMatchObject({ kind: 'leased', runId: 'late-b' })
    // And a job for the ended run takes no lease.
    expect(await admitted('late-a')).toEqual({ kind: 'ended' })
  })
})
