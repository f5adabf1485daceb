// Dispatch on PostgreSQL with real worker processes (bench/dispatch-worker.ts),
// each figure against a baseline measured in the same process run:
// - throughput: runs per second with 1, 2 and 4 workers (20 calls per run,
//   instant host and tool), against the same runs executed one after another
//   in this process without dispatch;
// - start latency: enqueueRun committed to the first journal line of the run
//   (its `ts`, stamped on append), p50/p99, against a LISTEN/NOTIFY round trip;
// - takeover: SIGKILL of a run's owner to the first line its successor writes,
//   against the configured lease (target under lease + 1 s). Kills land at
//   spread points of the heartbeat period, and each run is cancelled once taken
//   over, so every kill finds a surviving worker with a free slot.
// Skips with a message without LOCUS_TEST_PG_URL.
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { printTable, reportTarget } from '@locus/bench-kit'
import { runWorkflowScript } from '@locus/runtime'
import pg from 'pg'
import { createPostgresRunStore, enqueueRun, migrateDispatch, requestCancel } from '../src/index.js'
import { instantHost, slowWorkflow, stepsWorkflow } from './dispatch-workflows.js'
import { admin, databaseUrl } from '../test/pg-test-database.js'
import { children, quantile, row, sleep, startWorker as startBenchWorker, waitFor } from './bench-workers.js'

const base = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
if (base === undefined) {
  console.log('@locus/store-postgres dispatch bench: skipped, set LOCUS_TEST_PG_URL to a PostgreSQL database to run it.')
  process.exit(0)
}

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const SIZE = smoke ? { runs: 12, starts: 8, takeovers: 1 } : { runs: 300, starts: 100, takeovers: 10 }
const LEASE_MS = 2000
const CONCURRENCY = 4
const dbName = `locus_bench_dispatch_${String(process.pid)}`
const startWorker = (url: string): Promise<ChildProcess> => startBenchWorker(url, LEASE_MS, CONCURRENCY)


await admin(base, `drop database if exists "${dbName}" with (force)`)
await admin(base, `create database "${dbName}"`)
const url = databaseUrl(base, dbName)
const pool = new pg.Pool({ connectionString: url, max: 4 })
try {
  await migrateDispatch(url)

  // Baseline of throughput: the same runs one after another in this process, no dispatch.
  const store = createPostgresRunStore({ connectionString: url, maxConnections: 4 })
  const host = instantHost()
  const inProcessStarted = performance.now()
  for (let index = 0; index < SIZE.runs; index += 1) await runWorkflowScript(stepsWorkflow, { store, host, runId: `inline-${String(index)}` })
  const inProcessMsPerRun = (performance.now() - inProcessStarted) / SIZE.runs
  await store.close()

  // Baseline of start latency: the wake-up a worker cannot beat, one NOTIFY from a committed transaction to a listener.
  const listener = new pg.Client({ connectionString: url })
  await listener.connect()
  await listener.query('listen locus_bench_ping')
  const pings: number[] = []
  for (let index = 0; index < SIZE.starts; index += 1) {
    const heard = once(listener, 'notification')
    const sent = performance.now()
    await pool.query(`select pg_notify('locus_bench_ping', $1)`, [String(index)])
    await heard
    pings.push(performance.now() - sent)
  }
  await listener.end()

  const workers: ChildProcess[] = [await startWorker(url)]

  // Start latency: one run at a time on an idle worker.
  const starts: number[] = []
  for (let index = 0; index < SIZE.starts; index += 1) {
    const runId = `start-${String(index)}`
    const client = await pool.connect()
    try {
      await enqueueRun(client, { runId, workflow: stepsWorkflow.name })
    } finally {
      client.release()
    }
    const enqueued = Date.now()
    const first = await waitFor(
      async () => {
        const { rows } = await pool.query<{ first: Date | null }>(`select min((line->>'ts')::timestamptz) as first from locus_journal where run_id = $1`, [runId])
        return rows[0]?.first ?? undefined
      },
      30_000,
      `the first line of ${runId}`,
    )
    starts.push(first.getTime() - enqueued)
    await waitFor(async () => ((await pool.query(`select 1 from locus_runs where run_id = $1 and status <> 'running'`, [runId])).rowCount === 1 ? true : undefined), 30_000, `${runId} to end`)
  }

  // Throughput with 1, 2 and 4 worker processes.
  const perRun = new Map<number, number>()
  for (const count of [1, 2, 4]) {
    while (workers.length < count) workers.push(await startWorker(url))
    const started = performance.now()
    const client = await pool.connect()
    try {
      for (let index = 0; index < SIZE.runs; index += 1) await enqueueRun(client, { runId: `tp${String(count)}-${String(index)}`, workflow: stepsWorkflow.name })
    } finally {
      client.release()
    }
    await waitFor(
      async () => {
        const { rows } = await pool.query<{ ended: string; failed: string }>(
          `select count(*) filter (where status <> 'running') as ended, count(*) filter (where status in ('failed', 'cancelled')) as failed from locus_runs where run_id like $1`,
          [`tp${String(count)}-%`],
        )
        if (Number(rows[0]?.failed ?? 0) > 0) throw new Error(`dispatch bench: ${String(rows[0]?.failed)} runs failed`)
        return Number(rows[0]?.ended ?? 0) === SIZE.runs ? true : undefined
      },
      300_000,
      `${String(SIZE.runs)} runs on ${String(count)} workers`,
    )
    perRun.set(count, (performance.now() - started) / SIZE.runs)
  }

  // Takeover: kill the owner of a running run and time its successor's first line.
  const takeovers: number[] = []
  for (let index = 0; index < SIZE.takeovers; index += 1) {
    const runId = `takeover-${String(index)}`
    const client = await pool.connect()
    try {
      await enqueueRun(client, { runId, workflow: slowWorkflow.name })
    } finally {
      client.release()
    }
    // The owner's pid, from its latest tool result; let the run write for a while first.
    const pid = await waitFor(
      async () => {
        const { rows } = await pool.query<{ pid: number | null }>(
          `select (line->'result'->>'pid')::int as pid from locus_journal where run_id = $1 and line->>'type' = 'tool_end' and line->'result' ? 'pid' order by seq desc limit 1`,
          [runId],
        )
        return rows[0]?.pid ?? undefined
      },
      30_000,
      `a tool result of ${runId}`,
    )
    // Spread the kills over the owner's heartbeat period (a third of the lease): a kill right after a
    // heartbeat leaves the lease a whole lease to run, one right before it two thirds.
    await sleep(300 + ((index * 7) % 10) * 70)
    const owner = workers.find((child) => child.pid === pid)
    if (owner === undefined) throw new Error(`dispatch bench: ${runId} is run by pid ${String(pid)}, not one of this bench's workers`)
    const killed = Date.now()
    owner.kill('SIGKILL')
    workers.splice(workers.indexOf(owner), 1)
    const first = await waitFor(
      async () => {
        const { rows } = await pool.query<{ first: Date | null }>(
          `select min((line->>'ts')::timestamptz) as first from locus_journal where run_id = $1 and (line->>'ts')::timestamptz > to_timestamp($2 / 1000.0)`,
          [runId, killed],
        )
        return rows[0]?.first ?? undefined
      },
      30_000,
      `a successor of ${runId}`,
    )
    takeovers.push(first.getTime() - killed)
    // Runs left going would pile up on the survivors (they take over the dead owner's other runs
    // too), until a kill finds no worker with a free slot and waits for a run to end instead.
    await requestCancel(pool, runId)
    await waitFor(async () => ((await pool.query(`select 1 from locus_runs where run_id = $1 and status <> 'running'`, [runId])).rowCount === 1 ? true : undefined), 30_000, `${runId} to end`)
    if (workers.length < 2) workers.push(await startWorker(url))
  }

  printTable(
    `@locus/store-postgres dispatch: throughput, ${String(SIZE.runs)} runs of 20 calls (instant host and tool), ${String(CONCURRENCY)} runs at once per worker; per item = wall time per run`,
    [row('in this process, one run after another, no dispatch', inProcessMsPerRun), ...[1, 2, 4].map((count) => row(`${String(count)} worker process${count === 1 ? '' : 'es'}`, perRun.get(count) ?? Number.NaN))],
    'in this process, one run after another, no dispatch',
  )
  for (const count of [1, 2, 4]) console.log(`runs per second with ${String(count)} worker${count === 1 ? '' : 's'}: ${(1000 / (perRun.get(count) ?? Number.NaN)).toFixed(1)} (in process, no dispatch: ${(1000 / inProcessMsPerRun).toFixed(1)})`)
  printTable(
    `@locus/store-postgres dispatch: start latency, enqueueRun committed to the run's first journal line (${String(SIZE.starts)} runs)`,
    [row('floor: NOTIFY to a listener, p50', quantile(pings, 0.5)), row('floor: NOTIFY to a listener, p99', quantile(pings, 0.99)), row('enqueueRun to first line, p50', quantile(starts, 0.5)), row('enqueueRun to first line, p99', quantile(starts, 0.99))],
    'floor: NOTIFY to a listener, p50',
  )
  printTable(
    `@locus/store-postgres dispatch: takeover, SIGKILL of the owner to its successor's first line (${String(SIZE.takeovers)} kills, lease ${String(LEASE_MS)} ms)`,
    [row('configured lease', LEASE_MS), row('takeover, median', quantile(takeovers, 0.5)), row('takeover, slowest', Math.max(...takeovers))],
    'configured lease',
  )
  reportTarget('slowest takeover, ms (lease + 1 s)', Math.max(...takeovers), LEASE_MS + 1000, ' ms')
} finally {
  for (const child of children) child.kill('SIGKILL')
  await pool.end()
  await admin(base, `drop database if exists "${dbName}" with (force)`)
}
