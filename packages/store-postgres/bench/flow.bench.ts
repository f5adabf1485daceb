// Flow control on PostgreSQL with real worker processes (bench/dispatch-worker.ts),
// each figure beside a baseline measured in the same run:
// - scaling with I/O-bound runs (calls that wait 200 ms, as a model does):
//   1, 2 and 4 workers at a fixed per-worker concurrency; target at least 3.5x
//   from 1 to 4 workers (the CPU is mostly idle, so workers add slots);
// - the cost of a concurrency key and of a shared rate limit per run and per
//   call, against the same instant runs without them, on one worker;
// - a fairness soak: one tenant queues a big backlog and nine tenants queue 10
//   runs each behind it, on 4 workers; the small tenants' p95 from enqueue to
//   start is set against the same runs with the big tenant absent (target at
//   most 2x), and an audit of the lease rows over the whole soak counts any
//   moment where a key ran more runs than its limit (must be none).
// Sizes: LOCUS_BENCH_SMOKE=1 for a quick pass. Skips without LOCUS_TEST_PG_URL.
import type { ChildProcess } from 'node:child_process'
import { printTable, reportTarget } from '@locus/bench-kit'
import pg from 'pg'
import { enqueueRun, migrateDispatch } from '../src/index.js'
import { children, quantile, row, startWorker, stopWorkers, waitFor } from './bench-workers.js'
import { IO_CALL_MS, TENANT_LIMIT, ioWorkflow, keyedStepsWorkflow, stepsWorkflow, tenantWorkflow } from './dispatch-workflows.js'
import { admin, databaseUrl } from '../test/pg-test-database.js'

const base = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
if (base === undefined) {
  console.log('@locus/store-postgres flow bench: skipped, set LOCUS_TEST_PG_URL to a PostgreSQL database to run it.')
  process.exit(0)
}

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const SIZE = smoke ? { ioRuns: 64, costRuns: 20, bigRuns: 200 } : { ioRuns: 384, costRuns: 100, bigRuns: 2000 }
const SMALL_TENANTS = 9
const SMALL_RUNS = 10
const LEASE_MS = 5000
const CONCURRENCY = 4
const IO_CALLS = 2
const CALLS_PER_STEPS_RUN = 20
const dbName = `locus_bench_flow_${String(process.pid)}`

await admin(base, `drop database if exists "${dbName}" with (force)`)
await admin(base, `create database "${dbName}"`)
const url = databaseUrl(base, dbName)
const pool = new pg.Pool({ connectionString: url, max: 4 })

/** A workflow by definition, so its concurrency keys are computed at enqueue. */
type QueuedWorkflow = Parameters<typeof enqueueRun>[1]['workflow']

async function enqueueAll(runs: readonly { readonly runId: string; readonly workflow: QueuedWorkflow; readonly input?: unknown }[]): Promise<void> {
  const client = await pool.connect()
  try {
    for (const run of runs) await enqueueRun(client, { runId: run.runId, workflow: run.workflow, ...(run.input === undefined ? {} : { input: run.input }) })
  } finally {
    client.release()
  }
}

async function allEnded(prefix: string, count: number): Promise<void> {
  await waitFor(
    async () => {
      const { rows } = await pool.query<{ ended: string; failed: string }>(
        `select count(*) filter (where status <> 'running') as ended, count(*) filter (where status in ('failed', 'cancelled')) as failed from locus_runs where run_id like $1`,
        [`${prefix}%`],
      )
      if (Number(rows[0]?.failed ?? 0) > 0) throw new Error(`flow bench: ${String(rows[0]?.failed)} runs of ${prefix} failed`)
      return Number(rows[0]?.ended ?? 0) === count ? true : undefined
    },
    600_000,
    `${String(count)} runs of ${prefix}`,
  )
}

/** Times `count` runs of `workflow` on the workers running now, from the first enqueue to the last end: ms per run. */
async function timeRuns(prefix: string, count: number, workflow: QueuedWorkflow, input?: unknown): Promise<number> {
  const started = performance.now()
  await enqueueAll(Array.from({ length: count }, (_, index) => ({ runId: `${prefix}${String(index)}`, workflow, input })))
  await allEnded(prefix, count)
  return (performance.now() - started) / count
}

const workers: ChildProcess[] = []
try {
  await migrateDispatch(url)

  // 1. Scaling with I/O-bound runs.
  const ioMsPerRun = new Map<number, number>()
  for (const count of [1, 2, 4]) {
    while (workers.length < count) workers.push(await startWorker(url, LEASE_MS, CONCURRENCY))
    ioMsPerRun.set(count, await timeRuns(`io${String(count)}-`, SIZE.ioRuns, ioWorkflow, { calls: IO_CALLS }))
  }
  await stopWorkers(workers)
  // The floor: a run's calls back to back with every slot busy, the best any number of workers could do.
  const idealOne = (IO_CALLS * IO_CALL_MS) / CONCURRENCY
  printTable(
    `@locus/store-postgres flow: I/O-bound runs (${String(IO_CALLS)} calls of ${String(IO_CALL_MS)} ms), ${String(SIZE.ioRuns)} runs, ${String(CONCURRENCY)} at once per worker; per item = wall time per run`,
    [row('floor: one worker, every slot busy, no overhead', idealOne), ...[1, 2, 4].map((count) => row(`${String(count)} worker process${count === 1 ? '' : 'es'}`, ioMsPerRun.get(count) ?? Number.NaN))],
    'floor: one worker, every slot busy, no overhead',
  )
  const scaling = (ioMsPerRun.get(1) ?? Number.NaN) / (ioMsPerRun.get(4) ?? Number.NaN)
  console.log(`target ${scaling >= 3.5 ? 'met   ' : 'MISSED'} I/O-bound throughput from 1 to 4 workers: ${scaling.toFixed(2)}x (target >= 3.5x)`)

  // 2. What a concurrency key and a shared rate limit cost, on one worker, instant runs of 20 calls.
  workers.push(await startWorker(url, LEASE_MS, CONCURRENCY))
  // A warm-up first: the first runs on a fresh worker pay for its start (module loading, JIT, pool connections).
  await timeRuns('warm-', SIZE.costRuns, stepsWorkflow)
  const plain = await timeRuns('plain-', SIZE.costRuns, stepsWorkflow)
  const keyed = await timeRuns('keyed-', SIZE.costRuns, keyedStepsWorkflow)
  await stopWorkers(workers)
  workers.push(await startWorker(url, LEASE_MS, CONCURRENCY, [{ match: {}, requestsPerMinute: 1_000_000 }]))
  const limited = await timeRuns('limited-', SIZE.costRuns, stepsWorkflow)
  await stopWorkers(workers)
  printTable(
    `@locus/store-postgres flow: cost of a concurrency key and of a shared rate limit (${String(SIZE.costRuns)} runs of ${String(CALLS_PER_STEPS_RUN)} calls, half of them LLM requests, one worker); per item = wall time per run`,
    [row('no key, no rate limit', plain), row('a concurrency key (limit never reached)', keyed), row('a shared rate limit on every LLM request (never reached)', limited)],
    'no key, no rate limit',
  )
  console.log(`a concurrency key costs ${(keyed - plain).toFixed(2)} ms per start; a shared rate limit ${((limited - plain) / (CALLS_PER_STEPS_RUN / 2)).toFixed(3)} ms per LLM request`)

  // 3. Fairness soak on four workers, with an audit of the lease rows throughout. Each phase queues all its runs
  // before the workers start, so the big tenant's backlog is a real one (enqueueing is slower than four workers
  // drain); a run's wait counts from when it was queued or all the workers were ready, whichever came later.
  const auditor = new pg.Client({ connectionString: url })
  await auditor.connect()
  const audit = { going: true, over: 0, samples: 0 }
  const auditing = (async () => {
    while (audit.going) {
      const { rows } = await auditor.query<{ over: string }>(
        // A slot is held by a running run with a lease, live or past its expiry (admission's own rule). A run that has
        // saved its run_end runs nothing, though its worker may still hold the lease while it records the run's metrics.
        `select count(*) as over from (select k.key, max(k.lim) as lim, count(*) as n from locus_run_keys k join locus_leases l on l.run_id = k.run_id
           join locus_runs r on r.run_id = k.run_id
           where l.owner is not null and r.status = 'running' and k.lim is not null group by k.key) held where n > lim`,
      )
      audit.samples += 1
      audit.over += Number(rows[0]?.over ?? 0)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  })()
  const smallRuns = (phase: string) =>
    Array.from({ length: SMALL_TENANTS * SMALL_RUNS }, (_, index) => ({
      runId: `${phase}-small-${String(index % SMALL_TENANTS)}-${String(Math.floor(index / SMALL_TENANTS))}`,
      workflow: tenantWorkflow,
      input: { tenant: `small-${String(index % SMALL_TENANTS)}` },
    }))
  const startedAt = new Map<string, number>()
  const phase = async (name: string, runs: Parameters<typeof enqueueAll>[0]): Promise<void> => {
    await enqueueAll(runs)
    await Promise.all(Array.from({ length: 4 }, () => startWorker(url, LEASE_MS, CONCURRENCY))).then((started) => workers.push(...started))
    // Worker processes take a while to start on a busy machine: the clock starts once they are all taking jobs.
    startedAt.set(name, Date.now())
    await allEnded(`${name}-`, runs.length)
    await stopWorkers(workers)
  }
  try {
    // Alone: the nine small tenants' runs with nobody else queued.
    await phase('alone', smallRuns('alone'))
    // Behind a backlog: the big tenant queues first, then the small tenants queue theirs.
    await phase('soak', [...Array.from({ length: SIZE.bigRuns }, (_, index) => ({ runId: `soak-big-${String(index)}`, workflow: tenantWorkflow, input: { tenant: 'big' } })), ...smallRuns('soak')])
  } finally {
    audit.going = false
    await auditing
    await auditor.end()
  }
  /** Queued (or the workers started, if later) to start, of each run of `prefix`, in ms. */
  const waits = async (prefix: string, zero: number): Promise<number[]> => {
    const { rows } = await pool.query<{ created: string; admitted: string }>(
      `select extract(epoch from created_at) * 1000 as created, extract(epoch from admitted_at) * 1000 as admitted from locus_runs where run_id like $1`,
      [`${prefix}%`],
    )
    return rows.map((entry) => Number(entry.admitted) - Math.max(Number(entry.created), zero))
  }
  const alone = quantile(await waits('alone-small-', startedAt.get('alone') ?? 0), 0.95)
  const behind = quantile(await waits('soak-small-', startedAt.get('soak') ?? 0), 0.95)
  const big = quantile(await waits('soak-big-', startedAt.get('soak') ?? 0), 0.95)
  printTable(
    `@locus/store-postgres flow: fairness soak, ${String(SIZE.bigRuns)} runs of one tenant then ${String(SMALL_TENANTS)} tenants x ${String(SMALL_RUNS)}, 4 workers x ${String(CONCURRENCY)}, tenant limit ${String(TENANT_LIMIT)}, calls of ${String(IO_CALL_MS)} ms; per item = p95 from queued (or the workers' start) to start`,
    [row('small tenants, big tenant absent', alone), row('small tenants, behind the big backlog', behind), row("the big tenant's own runs", big)],
    'small tenants, big tenant absent',
  )
  reportTarget("small tenants' p95 enqueue-to-start behind a big backlog, against the same with it absent", behind / alone, 2)
  console.log(`lease audit: ${String(audit.samples)} samples, ${String(audit.over)} moments where a key ran more runs than its limit (must be 0)`)
  if (audit.over > 0) process.exitCode = 1
} finally {
  await stopWorkers(workers).catch(() => undefined)
  for (const child of children) child.kill('SIGKILL')
  await pool.end()
  await admin(base, `drop database if exists "${dbName}" with (force)`)
}
