// Runs parked in a sleep on PostgreSQL survive the death of every worker: while they sleep they hold no lease
// and no locked job, every worker is SIGKILLed, one worker is started again, and each run wakes at its due
// time and runs its second call once, its first never again. CI size; LOCUS_KILL_FULL=1 runs 200 runs.
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { JournalLine } from '@locus/journal'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { enqueueRun, migrateDispatch } from '../src/index.js'
import { admin, databaseUrl, until } from './pg-test-database.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL parked-sleep kill test: set LOCUS_TEST_PG_URL to run it')
const full = process.env.LOCUS_KILL_FULL === '1'
const RUNS = full ? 200 : 16
// Long enough for every run to park before the first is due, on a loaded machine too.
const SLEEP_MS = full ? 15_000 : 10_000
const LEASE_MS = 2_000
// A worker started again must take the due jobs within a second (the bound); on a loaded CI machine the
// process start alone can take most of that, so the CI size allows two.
const LATE_BOUND_MS = full ? 1_000 : 2_000
const fixture = fileURLToPath(new URL('./fixtures/sleep-worker.ts', import.meta.url))

function startWorker(dbUrl: string, children: Set<ChildProcess>): Promise<void> {
  const child = spawn(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', fixture, dbUrl, String(LEASE_MS)], { stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  let stderr = ''
  child.once('exit', (code, signal) => {
    children.delete(child)
    if (signal !== 'SIGKILL' && code !== 0) console.error(`a sleep worker exited (${String(code)}): ${stderr}`)
  })
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  return new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve()
    })
    child.once('exit', (code) => {
      reject(new Error(`worker exited (${String(code)}) before it was ready: ${stderr}`))
    })
  })
}

if (url !== undefined) {
  describe('sleeping runs parked on PostgreSQL, every worker SIGKILLed', () => {
    const dbName = `locus_sleep_kill_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    const dbUrl = databaseUrl(url, dbName)
    const children = new Set<ChildProcess>()
    let client: pg.Client

    beforeAll(async () => {
      await admin(url, `create database ${dbName}`)
      await migrateDispatch(dbUrl)
      client = new pg.Client({ connectionString: dbUrl })
      await client.connect()
      await client.query('create table sleep_tool_calls (run_id text not null, step text not null, pid int not null)')
    })
    afterAll(async () => {
      for (const child of children) child.kill('SIGKILL')
      await client.end()
      await admin(url, `drop database if exists ${dbName} with (force)`)
    })

    it(`${String(RUNS)} runs hold no lease and no locked job while they sleep, and wake at their due time on a worker started after the others died`, async () => {
      await Promise.all([startWorker(dbUrl, children), startWorker(dbUrl, children)])
      const runIds = Array.from({ length: RUNS }, (_, index) => `sleeper-${String(index)}`)
      for (const runId of runIds) await enqueueRun(client, { runId, workflow: 'sleeper', input: { ms: SLEEP_MS } })
      await until(
        'every run to be parked',
        async () => {
          const { rows } = await client.query<{ n: string }>(`select count(*) as n from locus_runs where status = 'waiting'`)
          return Number(rows[0]?.n) === RUNS ? true : undefined
        },
        SLEEP_MS,
      )
      // Parked: no lease held and no job locked; what is left is one job per timer, at its due time.
      expect((await client.query(`select 1 from locus_leases where owner is not null and expires_at > clock_timestamp()`)).rowCount).toBe(0)
      await until(
        'only timer jobs to be left',
        async () => {
          const { rows } = await client.query<{ key: string; locked: boolean }>(`select key, locked_by is not null as locked from graphile_worker.jobs`)
          return rows.length === RUNS && rows.every((row) => row.key.includes(':timer:') && !row.locked) ? true : undefined
        },
        5_000,
      )
      // Every worker dies while the runs sleep; one worker comes back before they are due.
      const dead = [...children].map((child) => new Promise<void>((resolve) => child.once('exit', () => { resolve(); })))
      for (const child of children) child.kill('SIGKILL')
      await Promise.all(dead)
      await startWorker(dbUrl, children)
      const readyAt = Date.now()
      await until(
        'every run to complete',
        async () => {
          const { rows } = await client.query<{ n: string }>(`select count(*) as n from locus_runs where status = 'completed'`)
          return Number(rows[0]?.n) === RUNS ? true : undefined
        },
        SLEEP_MS + 30_000,
      )
      const fired = (await client.query<{ run_id: string; line: JournalLine }>(`select run_id, line from locus_journal where line->>'type' = 'timer_fired'`)).rows
      expect(fired.map((row) => row.run_id).sort()).toEqual([...runIds].sort())
      // Late after its due time, or after the new worker was ready when that came after the due time (a slow
      // process start on a loaded machine is not the timer's doing).
      const late = fired.map((row) => {
        if (row.line.type !== 'timer_fired') return Number.NaN
        const firedAt = Date.parse(row.line.firedAt)
        const dueAt = firedAt - row.line.lateMs
        return firedAt - Math.max(dueAt, readyAt)
      })
      expect(Math.max(...late)).toBeLessThan(LATE_BOUND_MS)
      // Each call ran exactly once: the first before the deaths, never again; the second after the wake-up.
      const { rows: calls } = await client.query<{ run_id: string; step: string; n: string }>(`select run_id, step, count(*) as n from sleep_tool_calls group by run_id, step`)
      expect(calls).toHaveLength(RUNS * 2)
      for (const call of calls) expect(Number(call.n), `${call.run_id} ${call.step}`).toBe(1)
    }, 120_000)
  })
}
