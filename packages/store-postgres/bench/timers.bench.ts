// Durable time on PostgreSQL (issue #33), with real worker processes (bench/timers-worker.ts): how late a
// `sleep()` timer fires after its due time, and what parked sleeping runs take in the database.
// - live worker: runs that sleep, parked by their worker after PARK_AFTER_MS and woken by their timer's job,
//   one worker up throughout; `timer_fired.lateMs` p50/p99 from the journals, beside floors measured in the
//   same run (a bare setTimeout's lateness for the same delay, and a committed INSERT heard by LISTEN);
//   target p99 under 250 ms;
// - takeover: the worker dies (SIGKILL) during the sleep and another worker wakes the runs: runs still holding
//   their leases (a worker that does not park them), killed just before they are due, taken over by a worker
//   already up; and runs parked by a worker that is killed, woken by a worker started after the kill. Target
//   p99 under the configured lease + 1 s;
// - parked at rest: many runs parked in a long sleep on one worker: rows and bytes per table (graphile-worker's
//   included), against the same tables empty, and a check that none holds a lease or a locked job; then they
//   are cancelled through the worker.
// Each part runs in a scratch database of its own (graphile-worker's schema is one per database), dropped at the
// end. Sizes: LOCUS_BENCH_SMOKE=1 for a quick pass. Skips with a message without LOCUS_TEST_PG_URL.
import { type ChildProcess, spawn } from 'node:child_process'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { reportTarget } from '@locus/bench-kit'
import type { JournalLine } from '@locus/journal'
import pg from 'pg'
import { enqueueRun, migrateDispatch, requestCancel } from '../src/index.js'
import { admin, databaseUrl, until } from '../test/pg-test-database.js'
import { children, quantile } from './bench-workers.js'

const base = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
if (base === undefined) {
  console.log('@locus/store-postgres timers bench: skipped, set LOCUS_TEST_PG_URL to a PostgreSQL database to run it.')
  process.exit(0)
}

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const SIZE = smoke ? { live: 20, held: 8, parkedKill: 20, parked: 500 } : { live: 200, held: 32, parkedKill: 100, parked: 10_000 }
const LEASE_MS = 2_000
const PARK_AFTER_MS = 50
const CONCURRENCY = 8
/** The parking worker of the last part: more slots, so ten thousand runs park sooner. */
const PARKED_CONCURRENCY = 16
const LIVE_SLEEP_MS = 1_500
/** Long enough for every run to start and a second worker to come up before the first is due. */
const HELD_SLEEP_MS = 8_000
/** The owner of the held runs dies this long before the first of them is due. */
const KILL_LEAD_MS = 200
/** Long enough for every run to park, and a worker to start after the kill, before the first is due. */
const PARKED_KILL_SLEEP_MS = 10_000
const PARKED_SLEEP_MS = 3_600_000
/** A worker that never parks a run within the sleep: its runs hold their leases while they sleep. */
const NEVER_PARK_MS = 600_000
// What startRunWorker gives graphile-worker and its sweeper (src/dispatch.ts), for the printout: an idle slot looks
// for due jobs this often, and a worker sweeps for lapsed leases, and for jobs coming due before its next sweep (it
// nudges its own slots at their due time), this often.
const POLL_MS = Math.max(100, Math.floor(LEASE_MS / 4))
const SWEEP_MS = Math.max(25, Math.min(200, Math.floor(LEASE_MS / 4)))
const fixture = fileURLToPath(new URL('./timers-worker.ts', import.meta.url))
const dbName = `locus_bench_timers_${String(process.pid)}`
const parkDbName = `locus_bench_timers_park_${String(process.pid)}`

// ---- Worker processes.

/** Starts a worker process with `concurrency` slots and resolves once it takes jobs. */
async function startWorker(url: string, concurrency: number, parkAfterMs: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', fixture, url, String(LEASE_MS), String(concurrency), String(parkAfterMs)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.add(child)
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  child.once('exit', (code, signal) => {
    children.delete(child)
    if (signal === null && code !== 0) console.error(`timers bench: a worker exited (${String(code)}): ${stderr}`)
  })
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve()
    })
    child.once('exit', (code) => {
      reject(new Error(`timers bench: a worker exited (${String(code)}) before it was ready: ${stderr}`))
    })
  })
  return child
}

/** Sends `signal` to a worker and waits for its exit; resolves with when the signal was sent. */
async function endWorker(child: ChildProcess, signal: 'SIGKILL' | 'SIGTERM'): Promise<number> {
  const at = Date.now()
  if (child.exitCode !== null || child.signalCode !== null) return at
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      resolve()
    })
  })
  child.kill(signal)
  await exited
  return at
}

// ---- Runs, journals and the database.

const ids = (prefix: string, count: number): string[] => Array.from({ length: count }, (_, index) => `${prefix}${String(index)}`)

/** Queues `napper` runs sleeping `ms`, over four connections at once. */
async function enqueueAll(pool: pg.Pool, runIds: readonly string[], ms: number): Promise<void> {
  const lanes = 4
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      const client = await pool.connect()
      try {
        for (const runId of runIds.filter((_id, index) => index % lanes === lane)) await enqueueRun(client, { runId, workflow: 'napper', input: { ms } })
      } finally {
        client.release()
      }
    }),
  )
}

async function statuses(pool: pg.Pool, prefix: string): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ status: string; n: string }>('select status, count(*) as n from locus_runs where run_id like $1 group by status', [`${prefix}%`])
  return new Map(rows.map((row) => [row.status, Number(row.n)]))
}

/** Waits for `count` runs of `prefix` to be `status`; a run that failed (or was cancelled, unless that is awaited) throws. */
async function allInStatus(pool: pg.Pool, prefix: string, count: number, status: string, wait: { readonly timeoutMs: number; readonly everyMs?: number }): Promise<void> {
  await until(
    `${String(count)} runs of ${prefix} to be ${status}`,
    async () => {
      const now = await statuses(pool, prefix)
      const bad = (now.get('failed') ?? 0) + (status === 'cancelled' ? 0 : (now.get('cancelled') ?? 0))
      if (bad > 0) throw new Error(`timers bench: ${String(bad)} runs of ${prefix} failed or were cancelled`)
      return now.get(status) === count ? true : undefined
    },
    wait.timeoutMs,
    wait.everyMs ?? 50,
  )
}

interface Fired {
  readonly runId: string
  /** Fired in a resumed execution (after a park or a takeover), not in the run's first one. */
  readonly resumed: boolean
  readonly lateMs: number
}

/** The timers that fired (not replayed) in the runs of `prefix`, from their journals. */
async function firedTimers(pool: pg.Pool, prefix: string): Promise<Fired[]> {
  const { rows } = await pool.query<{ run_id: string; execution_id: string; line: JournalLine }>(
    `select run_id, execution_id, line from locus_journal where run_id like $1 and line->>'type' = 'timer_fired'`,
    [`${prefix}%`],
  )
  return rows.flatMap((row) => (row.line.type === 'timer_fired' && row.line.replayed !== true ? [{ runId: row.run_id, resumed: row.execution_id !== row.run_id, lateMs: row.line.lateMs }] : []))
}

/** When the runs of `prefix` started their sleep and when they are due, from their first executions' `timer_start`. */
async function timerStarts(pool: pg.Pool, prefix: string): Promise<{ readonly startedAt: number; readonly dueAt: number }[]> {
  const { rows } = await pool.query<{ line: JournalLine }>(`select line from locus_journal where run_id like $1 and execution_id = run_id and line->>'type' = 'timer_start'`, [`${prefix}%`])
  return rows.flatMap((row) => (row.line.type === 'timer_start' ? [{ startedAt: Date.parse(row.line.ts), dueAt: Date.parse(row.line.dueAt) }] : []))
}

/**
 * Where the lateness of timers fired in resumed executions goes: from the due time to the resumed execution's
 * `run_start` (the timer job found by a poll, the admission and the lease), then from that to `timer_fired` (the resume).
 */
async function wakeBreakdown(pool: pg.Pool, prefix: string): Promise<{ readonly toStart: number[]; readonly toFired: number[] }> {
  const { rows } = await pool.query<{ started: string; fired: string; late: number }>(
    `select s.line->>'ts' as started, f.line->>'firedAt' as fired, (f.line->>'lateMs')::float8 as late
     from locus_journal f join locus_journal s on s.run_id = f.run_id and s.execution_id = f.execution_id and s.line->>'type' = 'run_start'
     where f.run_id like $1 and f.execution_id <> f.run_id and f.line->>'type' = 'timer_fired' and coalesce(f.line->>'replayed', 'false') <> 'true'`,
    [`${prefix}%`],
  )
  return {
    toStart: rows.map((row) => Date.parse(row.started) - (Date.parse(row.fired) - row.late)),
    toFired: rows.map((row) => Date.parse(row.fired) - Date.parse(row.started)),
  }
}

async function takeovers(pool: pg.Pool, prefix: string): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(`select count(distinct run_id) as n from locus_journal where run_id like $1 and line->>'type' = 'worker_takeover'`, [`${prefix}%`])
  return Number(rows[0]?.n ?? 0)
}

/** What holds the runs: leases with an owner, and graphile-worker's jobs (locked ones, and timer jobs). */
async function holds(pool: pg.Pool): Promise<{ readonly leased: number; readonly jobs: number; readonly locked: number; readonly timerJobs: number }> {
  const [{ rows: leases }, { rows: jobs }] = await Promise.all([
    pool.query<{ leased: string }>('select count(*) filter (where owner is not null) as leased from locus_leases'),
    pool.query<{ jobs: string; locked: string; timers: string }>(
      `select count(*) as jobs, count(*) filter (where locked_by is not null) as locked, count(*) filter (where key like '%:timer:%') as timers from graphile_worker.jobs`,
    ),
  ])
  return { leased: Number(leases[0]?.leased ?? 0), jobs: Number(jobs[0]?.jobs ?? 0), locked: Number(jobs[0]?.locked ?? 0), timerJobs: Number(jobs[0]?.timers ?? 0) }
}

interface TableSize {
  readonly schema: string
  readonly name: string
  readonly rows: number
  readonly bytes: number
}

/** Every table of the Locus schema and of graphile-worker's: its rows, and its bytes with indexes and TOAST. */
async function tableSizes(pool: pg.Pool): Promise<TableSize[]> {
  const { rows: tables } = await pool.query<{ schema: string; name: string }>(
    `select n.nspname as schema, c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relkind in ('r', 'p') and n.nspname in ('public', 'graphile_worker') order by n.nspname <> 'public', c.relname`,
  )
  const sizes: TableSize[] = []
  for (const { schema, name } of tables) {
    const table = `"${schema}"."${name}"`
    const { rows } = await pool.query<{ n: string; bytes: string }>(`select (select count(*) from ${table}) as n, pg_total_relation_size($1::regclass) as bytes`, [table])
    sizes.push({ schema, name, rows: Number(rows[0]?.n ?? 0), bytes: Number(rows[0]?.bytes ?? 0) })
  }
  return sizes
}

// ---- Floors.

/** The lateness of `count` bare timers of `ms`, started together. */
async function setTimeoutFloor(count: number, ms: number): Promise<number[]> {
  return Promise.all(
    Array.from({ length: count }, () => {
      const due = Date.now() + ms
      return new Promise<number>((resolve) => {
        setTimeout(() => {
          resolve(Math.max(0, Date.now() - due))
        }, ms)
      })
    }),
  )
}

/** A committed INSERT heard by a LISTEN connection, `count` times one after another: the least a wake-up through the database costs. */
async function listenFloor(url: string, count: number): Promise<number[]> {
  const listener = new pg.Client({ connectionString: url })
  const writer = new pg.Client({ connectionString: url })
  await Promise.all([listener.connect(), writer.connect()])
  try {
    await writer.query('create table bench_timer_pings (id serial primary key)')
    await listener.query('listen bench_timer_pings')
    const heard: number[] = []
    for (let index = 0; index < count; index += 1) {
      const notified = new Promise<void>((resolve) => {
        listener.once('notification', () => {
          resolve()
        })
      })
      const begin = performance.now()
      await writer.query(`with put as (insert into bench_timer_pings default values returning id) select pg_notify('bench_timer_pings', id::text) from put`)
      await notified
      heard.push(performance.now() - begin)
    }
    await writer.query('drop table bench_timer_pings')
    return heard
  } finally {
    await Promise.all([listener.end(), writer.end()])
  }
}

// ---- Printing.

const ms = (value: number): string => `${value.toFixed(0)} ms`.padStart(8)
const printLateness = (title: string, cases: readonly (readonly [string, readonly number[]])[]): void => {
  console.log(`\n${title}`)
  console.log(`${'case'.padEnd(60)}  ${'min'.padStart(8)}  ${'p50'.padStart(8)}  ${'p99'.padStart(8)}  ${'max'.padStart(8)}`)
  for (const [name, values] of cases) {
    console.log(`${name.padEnd(60)}  ${ms(Math.min(...values))}  ${ms(quantile(values, 0.5))}  ${ms(quantile(values, 0.99))}  ${ms(Math.max(...values))}`)
  }
}
const bytes = (value: number): string => (value >= 1024 * 1024 ? `${(value / (1024 * 1024)).toFixed(2)} MiB` : `${(value / 1024).toFixed(1)} KiB`)

// ---- The parts.


/** Runs sleeping LIVE_SLEEP_MS, queued together, parked by one worker up throughout and woken by their timers' jobs. */
async function liveWorker(url: string, pool: pg.Pool): Promise<void> {
  const bare = await setTimeoutFloor(SIZE.live, LIVE_SLEEP_MS)
  const heard = await listenFloor(url, SIZE.live)
  const worker = await startWorker(url, CONCURRENCY, PARK_AFTER_MS)
  let queuedAt = 0
  try {
    // A warm-up: the first runs on a fresh worker pay for its start (module loading, JIT, pool connections).
    const warm = ids('warm-', CONCURRENCY)
    await enqueueAll(pool, warm, 300)
    await allInStatus(pool, 'warm-', warm.length, 'completed', { timeoutMs: 60_000 })
    queuedAt = Date.now()
    await enqueueAll(pool, ids('live-', SIZE.live), LIVE_SLEEP_MS)
    await allInStatus(pool, 'live-', SIZE.live, 'completed', { timeoutMs: 300_000 })
  } finally {
    await endWorker(worker, 'SIGTERM')
  }
  const fired = await firedTimers(pool, 'live-')
  if (fired.length !== SIZE.live) throw new Error(`timers bench: expected ${String(SIZE.live)} timer_fired lines, got ${String(fired.length)}`)
  const starts = await timerStarts(pool, 'live-')
  const lastStart = Math.max(...starts.map((start) => start.startedAt))
  const firstDue = Math.min(...starts.map((start) => start.dueAt))
  const late = fired.map((timer) => timer.lateMs)
  const parts = await wakeBreakdown(pool, 'live-')
  printLateness(
    `@locus/store-postgres timers: lateness after the due time, ${String(SIZE.live)} runs queued together, each sleeping ${String(LIVE_SLEEP_MS)} ms, one worker process up throughout ` +
      `(${String(CONCURRENCY)} slots, lease ${String(LEASE_MS)} ms, parks after ${String(PARK_AFTER_MS)} ms; an idle slot polls for due jobs every ${String(POLL_MS)} ms, and each sweep, every ${String(SWEEP_MS)} ms, nudges it when a job comes due)`,
    [
      [`floor: setTimeout(${String(LIVE_SLEEP_MS)}), ${String(SIZE.live)} together, lateness`, bare],
      ['floor: committed INSERT heard by LISTEN, round trip', heard],
      ['sleep(), parked, woken by its timer job', late],
      ["  of which: due time to the resumed execution's run_start", parts.toStart],
      ['  of which: run_start to timer_fired (the resume)', parts.toFired],
    ],
  )
  console.log(
    `fired after a park: ${String(fired.filter((timer) => timer.resumed).length)} of ${String(fired.length)}; the last run began its sleep ${String(lastStart - queuedAt)} ms after the queueing began, ` +
      `the first was due ${String(firstDue - queuedAt)} ms after it`,
  )
  reportTarget('sleep() on PostgreSQL with a live worker, p99 lateness', quantile(late, 0.99), 250, ' ms')
}

interface Takeover {
  readonly late: number[]
  readonly takenOver: number
  /** Timers that fired before the kill (the machine too slow to kill in time): not takeovers. */
  readonly firedBefore: number
  readonly note: string
}

/** Runs holding their leases in a sleep (their worker does not park them); the worker dies just before they are due, and a worker already up takes them over. */
async function heldTakeover(url: string, pool: pg.Pool): Promise<Takeover> {
  const owner = await startWorker(url, SIZE.held, NEVER_PARK_MS)
  await enqueueAll(pool, ids('held-', SIZE.held), HELD_SLEEP_MS)
  const starts = await until('every held run to sleep', async () => {
    const now = await timerStarts(pool, 'held-')
    return now.length === SIZE.held ? now : undefined
  }, 60_000, 50)
  const firstDue = Math.min(...starts.map((start) => start.dueAt))
  const successor = await startWorker(url, SIZE.held, NEVER_PARK_MS)
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, firstDue - KILL_LEAD_MS - Date.now())))
  const firedBefore = (await firedTimers(pool, 'held-')).length
  const killedAt = await endWorker(owner, 'SIGKILL')
  try {
    await allInStatus(pool, 'held-', SIZE.held, 'completed', { timeoutMs: 120_000 })
  } finally {
    await endWorker(successor, 'SIGTERM')
  }
  const fired = await firedTimers(pool, 'held-')
  const lastDue = Math.max(...starts.map((start) => start.dueAt))
  return {
    late: fired.map((timer) => timer.lateMs),
    takenOver: await takeovers(pool, 'held-'),
    firedBefore,
    note: `killed ${String(firstDue - killedAt)} ms before the first was due (the last ${String(lastDue - killedAt)} ms)`,
  }
}

/** Runs parked in a sleep by a worker that dies while they sleep; a worker started after the kill wakes them. */
async function parkedTakeover(
  url: string,
  pool: pg.Pool,
): Promise<Takeover & { readonly atKill: Awaited<ReturnType<typeof holds>>; readonly parts: Awaited<ReturnType<typeof wakeBreakdown>> }> {
  const owner = await startWorker(url, CONCURRENCY, PARK_AFTER_MS)
  await enqueueAll(pool, ids('pk-', SIZE.parkedKill), PARKED_KILL_SLEEP_MS)
  await allInStatus(pool, 'pk-', SIZE.parkedKill, 'waiting', { timeoutMs: 120_000 })
  // graphile-worker deletes a run's own job just after the park's transaction: what is left is one job per timer.
  await until('only the timer jobs to be left', async () => {
    const now = await holds(pool)
    return now.jobs === SIZE.parkedKill && now.timerJobs === SIZE.parkedKill && now.locked === 0 && now.leased === 0 ? true : undefined
  }, 10_000).catch(() => undefined)
  const atKill = await holds(pool)
  const killedAt = await endWorker(owner, 'SIGKILL')
  const successor = await startWorker(url, CONCURRENCY, PARK_AFTER_MS)
  const readyAt = Date.now()
  try {
    await allInStatus(pool, 'pk-', SIZE.parkedKill, 'completed', { timeoutMs: PARKED_KILL_SLEEP_MS + 120_000 })
  } finally {
    await endWorker(successor, 'SIGTERM')
  }
  const firstDue = Math.min(...(await timerStarts(pool, 'pk-')).map((start) => start.dueAt))
  const fired = await firedTimers(pool, 'pk-')
  return {
    late: fired.map((timer) => timer.lateMs),
    takenOver: fired.filter((timer) => timer.resumed).length,
    firedBefore: fired.filter((timer) => !timer.resumed).length,
    atKill,
    parts: await wakeBreakdown(pool, 'pk-'),
    note: `the new worker was ready ${String(readyAt - killedAt)} ms after the kill, ${String(firstDue - readyAt)} ms before the first was due`,
  }
}

/** Many runs parked in a long sleep on one worker: what they take in the database, and that nothing holds them; then they are cancelled. */
async function parkedAtRest(server: string): Promise<void> {
  await admin(server, `drop database if exists "${parkDbName}" with (force)`)
  await admin(server, `create database "${parkDbName}"`)
  const url = databaseUrl(server, parkDbName)
  const pool = new pg.Pool({ connectionString: url, max: 4 })
  try {
    await migrateDispatch(url)
    const empty = await tableSizes(pool)
    const worker = await startWorker(url, PARKED_CONCURRENCY, PARK_AFTER_MS)
    try {
      const runIds = ids('p-', SIZE.parked)
      const began = performance.now()
      await enqueueAll(pool, runIds, PARKED_SLEEP_MS)
      const queuedMs = performance.now() - began
      await allInStatus(pool, 'p-', SIZE.parked, 'waiting', { timeoutMs: 1_800_000, everyMs: 1_000 })
      const parkedMs = performance.now() - began
      await until('only the timer jobs to be left, none locked, no lease held', async () => {
        const now = await holds(pool)
        return now.jobs === SIZE.parked && now.timerJobs === SIZE.parked && now.locked === 0 && now.leased === 0 ? true : undefined
      }, 60_000, 200).catch(() => undefined)
      const held = await holds(pool)
      const asLeft = await tableSizes(pool)
      for (const table of asLeft) await pool.query(`vacuum full "${table.schema}"."${table.name}"`)
      const compact = await tableSizes(pool)

      console.log(
        `\n@locus/store-postgres timers: ${String(SIZE.parked)} runs parked in a ${String(PARKED_SLEEP_MS / 1000)} s sleep on one worker process (${String(PARKED_CONCURRENCY)} slots, parks after ${String(PARK_AFTER_MS)} ms): ` +
          `queued in ${(queuedMs / 1000).toFixed(1)} s, all parked ${(parkedMs / 1000).toFixed(1)} s after the first was queued`,
      )
      console.log(`${'table'.padEnd(40)}  ${'rows'.padStart(7)}  ${'empty'.padStart(10)}  ${'as left'.padStart(10)}  ${'VACUUM FULL'.padStart(11)}`)
      const total = (sizes: readonly TableSize[]): number => sizes.reduce((sum, size) => sum + size.bytes, 0)
      for (const table of asLeft) {
        const key = `${table.schema}.${table.name}`
        const before = empty.find((size) => `${size.schema}.${size.name}` === key)?.bytes ?? 0
        const after = compact.find((size) => `${size.schema}.${size.name}` === key)?.bytes ?? Number.NaN
        console.log(`${key.padEnd(40)}  ${String(table.rows).padStart(7)}  ${bytes(before).padStart(10)}  ${bytes(table.bytes).padStart(10)}  ${bytes(after).padStart(11)}`)
      }
      console.log(`${'total'.padEnd(40)}  ${String(asLeft.reduce((sum, table) => sum + table.rows, 0)).padStart(7)}  ${bytes(total(empty)).padStart(10)}  ${bytes(total(asLeft)).padStart(10)}  ${bytes(total(compact)).padStart(11)}`)
      console.log(
        `per parked run, over the empty tables: ${((total(asLeft) - total(empty)) / SIZE.parked).toFixed(0)} bytes as left, ${((total(compact) - total(empty)) / SIZE.parked).toFixed(0)} bytes after VACUUM FULL ` +
          `(graphile_worker.jobs is the view of graphile_worker._private_jobs)`,
      )
      const { rows: lineTypes } = await pool.query<{ type: string; n: string }>(`select line->>'type' as type, count(*) as n from locus_journal group by 1 order by 2 desc, 1`)
      console.log(`journal lines: ${lineTypes.map((row) => `${row.type} ${row.n}`).join(', ')}`)
      const idle = held.leased === 0 && held.locked === 0
      console.log(
        `${idle ? 'none holds' : 'NOT ALL FREE:'} a lease or a locked job: ${String(held.leased)} leases with an owner, ${String(held.locked)} locked jobs; ` +
          `${String(held.jobs)} jobs queued, ${String(held.timerJobs)} of them timer jobs`,
      )

      // Cancelled through the worker: each is queued again, resumed, and ends cancelled.
      const cancelBegan = performance.now()
      const lanes = 4
      await Promise.all(
        Array.from({ length: lanes }, async (_, lane) => {
          const client = await pool.connect()
          try {
            for (const runId of runIds.filter((_id, index) => index % lanes === lane)) await requestCancel(client, runId, 'public', { reason: 'timers bench done', by: 'bench' })
          } finally {
            client.release()
          }
        }),
      )
      await allInStatus(pool, 'p-', SIZE.parked, 'cancelled', { timeoutMs: 1_800_000, everyMs: 1_000 })
      const left = await holds(pool)
      console.log(`cancelled all ${String(SIZE.parked)} in ${((performance.now() - cancelBegan) / 1000).toFixed(1)} s; jobs left after: ${String(left.jobs)} (${String(left.timerJobs)} timer jobs, due in ${String(PARKED_SLEEP_MS / 1000)} s)`)
    } finally {
      await endWorker(worker, 'SIGTERM')
    }
  } finally {
    await pool.end()
    await admin(server, `drop database if exists "${parkDbName}" with (force)`)
  }
}

const load = (): string => loadavg().map((value) => value.toFixed(2)).join(', ')
console.log(`@locus/store-postgres timers bench${smoke ? ' (smoke)' : ''}; Node ${process.version}; load average ${load()}`)
await admin(base, `drop database if exists "${dbName}" with (force)`)
await admin(base, `create database "${dbName}"`)
const url = databaseUrl(base, dbName)
const pool = new pg.Pool({ connectionString: url, max: 4 })
try {
  await migrateDispatch(url)
  await liveWorker(url, pool)
  const held = await heldTakeover(url, pool)
  const parked = await parkedTakeover(url, pool)
  printLateness(
    `@locus/store-postgres timers: lateness after the due time when the worker dies in the sleep (SIGKILL), lease ${String(LEASE_MS)} ms, a sweep every ${String(SWEEP_MS)} ms`,
    [
      [`held: ${String(SIZE.held)} runs holding their leases, taken over`, held.late],
      [`parked: ${String(SIZE.parkedKill)} runs parked, woken by a new worker`, parked.late],
      ["  of which: due time to the resumed execution's run_start", parked.parts.toStart],
      ['  of which: run_start to timer_fired (the resume)', parked.parts.toFired],
    ],
  )
  console.log(`held: ${String(held.takenOver)} of ${String(SIZE.held)} taken over (worker_takeover), ${String(held.firedBefore)} fired before the kill; ${held.note}`)
  console.log(
    `parked: at the kill ${String(parked.atKill.leased)} leases with an owner, ${String(parked.atKill.locked)} locked jobs, ${String(parked.atKill.timerJobs)} timer jobs; ` +
      `${String(parked.takenOver)} of ${String(SIZE.parkedKill)} fired after a resume; ${parked.note}`,
  )
  reportTarget('sleep() after a takeover of runs holding their leases, p99 lateness (lease + 1 s)', quantile(held.late, 0.99), LEASE_MS + 1000, ' ms')
  reportTarget('sleep() of parked runs after their worker died, p99 lateness (lease + 1 s)', quantile(parked.late, 0.99), LEASE_MS + 1000, ' ms')
  await parkedAtRest(base)
  console.log(`load average at the end: ${load()}`)
} finally {
  for (const child of children) child.kill('SIGKILL')
  await pool.end()
  await admin(base, `drop database if exists "${dbName}" with (force)`)
}
