// Messages into running runs (issue #36) on PostgreSQL:
// - an update's round trip on a live run, sent through another store on the
//   same database (another machine): `runtime.update` until the handler's
//   `update_completed` answers;
// - a signal's time from `runtime.signal` to the waiting script moving on, the
//   same way;
// - a signal to a run parked by its worker (no lease, no process holding it)
//   until the script moves on again: the requeue, a worker's takeover of the
//   job, the resume and the delivery.
// The floor, measured in the same process run on the same database, is one
// committed INSERT and a NOTIFY heard by a listener: the least a message
// from another machine can cost. Skips with a message without LOCUS_TEST_PG_URL.
import { reportTarget } from '@locus/bench-kit'
import type { JournalLine } from '@locus/journal'
import { createRuntime, defineWorkflow } from '@locus/runtime'
import pg from 'pg'
import { z } from 'zod'
import { createPostgresRunStore, enqueueRun, migrateDispatch, startRunWorker } from '../src/index.js'

const url = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
if (url === undefined) {
  console.log('@locus/store-postgres messages bench: skipped, set LOCUS_TEST_PG_URL to a PostgreSQL database to run it.')
  process.exit(0)
}

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const updates = smoke ? 20 : 200
const signals = smoke ? 10 : 50
const parked = smoke ? 5 : 20
const schema = `locus_bench_messages_${String(process.pid)}`

let sentAt = 0
const moved: number[] = []

const counter = defineWorkflow({
  name: 'counter',
  input: z.object({ signals: z.number().int() }),
  signals: { ping: z.number() },
  updates: { bump: { input: z.number(), output: z.number() } },
  async run({ input, onUpdate, waitForSignal }) {
    let total = 0
    onUpdate('bump', (n) => (total += n as number))
    for (let index = 0; index < input.signals; index += 1) {
      await waitForSignal('ping')
      moved.push(performance.now() - sentAt)
    }
    return { ok: true, total }
  },
})

/** Waits for one signal with no timeout: parked by its worker while it waits. */
const sleeper = defineWorkflow({
  name: 'sleeper',
  signals: { go: z.number() },
  async run({ waitForSignal }) {
    return { ok: true, got: await waitForSignal('go') }
  },
})

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN
}
const ms = (value: number): string => `${value.toFixed(2)} ms`
const sleep = (time: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, time))

const admin = new pg.Client({ connectionString: url })
await admin.connect()
const dbName = `locus_bench_msg_${String(process.pid)}`
await admin.query(`create database ${dbName}`)
const dbUrl = new URL(url)
dbUrl.pathname = `/${dbName}`
const database = dbUrl.toString()
try {
  // ---- The floor: a committed insert heard through LISTEN/NOTIFY by another connection.
  const listener = new pg.Client({ connectionString: database })
  const writer = new pg.Client({ connectionString: database })
  await Promise.all([listener.connect(), writer.connect()])
  await writer.query('create table bench_slots (id serial primary key, body text)')
  await listener.query('listen bench_slots')
  const floor: number[] = []
  for (let index = 0; index < updates; index += 1) {
    const heard = new Promise<void>((resolve) => listener.once('notification', () => { resolve(); }))
    const begin = performance.now()
    await writer.query("with put as (insert into bench_slots (body) values ('{}') returning id) select pg_notify('bench_slots', id::text) from put")
    await heard
    floor.push(performance.now() - begin)
  }
  await Promise.all([listener.end(), writer.end()])

  // ---- A live run, senders through another store.
  const executingStore = createPostgresRunStore({ connectionString: database, schema })
  const sendingStore = createPostgresRunStore({ connectionString: database, schema })
  const executing = createRuntime({ workflows: [counter], store: executingStore })
  const sending = createRuntime({ workflows: [counter], store: sendingStore })
  const handle = await executing.start('counter', { input: { signals } })
  while ((handle.view()?.openSignalWaits().length ?? 0) === 0) await sleep(5)
  const roundTrips: number[] = []
  for (let index = 0; index < updates; index += 1) {
    const begin = performance.now()
    const outcome = await sending.update(handle.runId, 'bump', 1, undefined, { waitMs: 10_000 })
    if (outcome.status !== 'completed') throw new Error(`update answered ${outcome.status}`)
    roundTrips.push(performance.now() - begin)
  }
  for (let index = 0; index < signals; index += 1) {
    const expected = moved.length + 1
    sentAt = performance.now()
    const outcome = await sending.signal(handle.runId, 'ping', index)
    if (!outcome.ok) throw new Error(`signal answered ${outcome.status}`)
    while (moved.length < expected) await sleep(1)
  }
  const liveSignals = [...moved]
  const ended = await handle.done
  if (ended.disposition !== 'completed') throw new Error(`the live run ended ${ended.disposition}`)
  await Promise.all([executingStore.close(), sendingStore.close()])

  // ---- Parked runs: a worker parks each while it waits; a signal through the dispatch path wakes it.
  await migrateDispatch(database)
  const worker = await startRunWorker({ connectionString: database, workflows: [sleeper], concurrency: 4, leaseMs: 5_000, parkAfterMs: 100 })
  const client = new pg.Client({ connectionString: database })
  await client.connect()
  const parkedStore = createPostgresRunStore({ connectionString: database })
  const sender = createRuntime({ workflows: [sleeper], store: parkedStore })
  const status = async (runId: string): Promise<string | undefined> => (await client.query<{ status: string }>('select status from locus_runs where run_id = $1', [runId])).rows[0]?.status
  const wakes: number[] = []
  try {
    for (let index = 0; index < parked; index += 1) {
      const runId = `parked-${String(index)}`
      await enqueueRun(client, { runId, workflow: 'sleeper', input: null })
      while ((await status(runId)) !== 'waiting') await sleep(10)
      const sent = Date.now()
      const outcome = await sender.signal(runId, 'go', index)
      if (!outcome.ok) throw new Error(`signal answered ${outcome.status}`)
      let end: JournalLine | undefined
      while (end === undefined) {
        await sleep(5)
        const { rows } = await client.query<{ line: JournalLine }>("select line from locus_journal where run_id = $1 and line->>'type' = 'signal_wait_end'", [runId])
        end = rows[0]?.line
      }
      wakes.push(Date.parse(end.ts) - sent)
    }
  } finally {
    await worker.stop()
    await parkedStore.close()
    await client.end()
  }

  console.log(`@locus/store-postgres messages; Node ${process.version}`)
  console.log(`   floor: a committed INSERT heard by a LISTEN connection (${floor.length}): p50 ${ms(percentile(floor, 50))}, p99 ${ms(percentile(floor, 99))}`)
  console.log(`   update round trip on a live run, sent through another store (${roundTrips.length}): p50 ${ms(percentile(roundTrips, 50))}, p99 ${ms(percentile(roundTrips, 99))} (p50 ${(percentile(roundTrips, 50) / percentile(floor, 50)).toFixed(1)}x the floor)`)
  console.log(`   signal to a live waiting script moving on, through another store (${liveSignals.length}): p50 ${ms(percentile(liveSignals, 50))}, p99 ${ms(percentile(liveSignals, 99))}`)
  console.log(`   signal to a parked run moving again (${wakes.length}; the journal's clock, ms resolution): p50 ${ms(percentile(wakes, 50))}, p99 ${ms(percentile(wakes, 99))}`)
  reportTarget('update round trip p50 on PostgreSQL', percentile(roundTrips, 50), 20, ' ms')
  reportTarget('signal to a parked run moving again, p99', percentile(wakes, 99), 1_000, ' ms')
} finally {
  await admin.query(`drop database if exists ${dbName} with (force)`)
  await admin.end()
}
