import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import type { JournalLine } from '@locus/journal'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPostgresRunStore, enqueueRun, migrateDispatch } from '../src/index.js'
import { admin, databaseUrl } from './pg-test-database.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL kill test: set LOCUS_TEST_PG_URL to run it')
// CI size asserts every invariant in seconds; LOCUS_KILL_FULL=1 runs the full size.
const full = process.env.LOCUS_KILL_FULL === '1'
const SIZE = full ? { workers: 3, runs: 60, kills: 30, branches: 4, rounds: 3 } : { workers: 3, runs: 10, kills: 4, branches: 3, rounds: 3 }
const LEASE_MS = 1000
const fixture = fileURLToPath(new URL('./fixtures/kill-worker.ts', import.meta.url))

function startWorker(dbUrl: string): { child: ChildProcess; ready: Promise<void> } {
  const child = spawn(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', fixture, dbUrl, String(LEASE_MS)], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve()
    })
    child.once('exit', (code) => {
      reject(new Error(`worker exited (${String(code)}) before it was ready: ${stderr}`))
    })
  })
  return { child, ready }
}

if (url !== undefined) {
  describe('workers sharing runs on PostgreSQL, killed at random', () => {
    const dbName = `locus_kill_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    const dbUrl = databaseUrl(url, dbName)
    const workers = new Set<ChildProcess>()

    beforeAll(async () => {
      await admin(url, `create database ${dbName}`)
      await migrateDispatch(dbUrl)
      await admin(dbUrl, 'create table kill_tool_calls (run_id text not null, branch int not null, round int not null, pid int not null, at timestamptz not null default clock_timestamp())')
    })
    afterAll(async () => {
      for (const child of workers) child.kill('SIGKILL')
      await Promise.all([...workers].filter((child) => child.exitCode === null && child.signalCode === null).map((child) => once(child, 'exit')))
      await admin(url, `drop database if exists ${dbName} with (force)`)
    })

    it(`completes ${SIZE.runs} runs across ${SIZE.workers} workers through ${SIZE.kills} SIGKILLs, each committed call once, one writer at a time`, async () => {
      const spawnOne = (): Promise<void> => {
        const worker = startWorker(dbUrl)
        workers.add(worker.child)
        worker.child.once('exit', () => workers.delete(worker.child))
        return worker.ready
      }
      await Promise.all(Array.from({ length: SIZE.workers }, spawnOne))

      const client = new pg.Client({ connectionString: dbUrl })
      await client.connect()
      const runIds = Array.from({ length: SIZE.runs }, (_, index) => `kill-run-${index}`)
      try {
        for (const runId of runIds) await enqueueRun(client, { runId, workflow: 'fanout', input: { branches: SIZE.branches, rounds: SIZE.rounds } })
        // Enqueueing twice queues nothing more.
        await enqueueRun(client, { runId: runIds[0] ?? '', workflow: 'fanout', input: { branches: SIZE.branches, rounds: SIZE.rounds } })

        // Kill a random worker whenever some run holds a lease, and start another in its place.
        let kills = 0
        const deadline = Date.now() + (full ? 600_000 : 40_000)
        for (;;) {
          const { rows } = await client.query<{ open: string; leased: string }>(
            `select count(*) filter (where status = 'running') as open,
                    (select count(*) from locus_leases where owner is not null and expires_at > clock_timestamp()) as leased
             from locus_runs`,
          )
          if (Number(rows[0]?.open) === 0) break
          if (Date.now() > deadline) {
            const stuck = await client.query(
              `select r.run_id, l.owner, l.epoch, l.expires_at, j.locked_by, j.attempts, j.last_error, j.run_at
               from locus_runs r left join locus_leases l using (run_id) left join graphile_worker.jobs j on j.key = r.run_id where r.status = 'running'`,
            )
            throw new Error(`runs still open after the deadline: ${JSON.stringify(stuck.rows)}`)
          }
          if (kills < SIZE.kills && Number(rows[0]?.leased) > 0) {
            // Prefer a worker in the middle of a run: the one whose tool ran last; else any.
            const victims = [...workers]
            const { rows: latest } = await client.query<{ pid: number }>('select pid from kill_tool_calls order by at desc limit 1')
            const busy = victims.find((child) => child.pid === latest[0]?.pid)
            const victim = busy ?? victims[Math.floor(Math.random() * victims.length)]
            if (victim !== undefined) {
              victim.kill('SIGKILL')
              await once(victim, 'exit')
              kills += 1
              // The replacement starts in the background; a kill may land before it is ready.
              spawnOne().catch(() => undefined)
            }
          }
          await new Promise((resolve) => setTimeout(resolve, kills < SIZE.kills ? 100 + Math.random() * 250 : 100))
        }
        expect(kills).toBe(SIZE.kills)

        const store = createPostgresRunStore({ connectionString: dbUrl, migrate: false })
        try {
          const expected = SIZE.rounds * Array.from({ length: SIZE.branches }, (_, branch) => branch * 10 + 'done'.length).reduce((a, b) => a + b, 0)
          let takeovers = 0
          for (const runId of runIds) {
            const executions = await store.listExecutions(runId)
            const lines: JournalLine[][] = []
            for (const execution of executions) {
              const own: JournalLine[] = []
              for await (const line of store.readLines(execution)) own.push(line)
              lines.push(own)
            }
            const all = lines.flat()
            // Every run completed with the right result, in its last execution.
            const ends = all.filter((line) => line.type === 'run_end')
            expect(ends.at(-1)).toMatchObject({ disposition: 'completed' })
            expect((ends.at(-1) as { result?: unknown }).result).toEqual({ ok: true, sum: expected })
            // No complete line lost: every execution's seqs run 1..n without a hole.
            for (const own of lines) expect(own.map((line) => line.seq)).toEqual(own.map((_, index) => index + 1))
            // One writer at a time: each execution names one epoch, the epochs rise, and an execution's lines end before the next begins.
            const epochs = lines.map((own) => own.find((line) => line.type === 'lease_acquired' || line.type === 'worker_takeover'))
            for (const announced of epochs) expect(announced).toBeDefined()
            const numbers = epochs.map((announced) => (announced as { epoch: number }).epoch)
            expect(numbers).toEqual([...numbers].sort((a, b) => a - b))
            expect(new Set(numbers).size).toBe(numbers.length)
            for (let index = 1; index < lines.length; index += 1) {
              const previousLast = lines[index - 1]?.at(-1)?.ts ?? ''
              const nextFirst = lines[index]?.[0]?.ts ?? ''
              expect(previousLast <= nextFirst).toBe(true)
            }
            takeovers += all.filter((line) => line.type === 'worker_takeover').length
            // A committed call never runs again: each branch's tool and agent completed live exactly once.
            const live = (type: 'tool_end' | 'agent_end') => all.filter((line) => line.type === type && line.status === 'completed' && line.replayed !== true)
            expect(live('tool_end')).toHaveLength(SIZE.branches * SIZE.rounds)
            expect(live('agent_end')).toHaveLength(SIZE.branches * SIZE.rounds)
          }
          // The kills did cut runs short, and their successors said so.
          expect(takeovers).toBeGreaterThan(0)
          // The side table: at least once per branch, and more only where a takeover cut a call short.
          const { rows } = await client.query<{ run_id: string; branch: number; n: string }>('select run_id, branch, round, count(*) as n from kill_tool_calls group by run_id, branch, round')
          expect(rows).toHaveLength(SIZE.runs * SIZE.branches * SIZE.rounds)
          const repeats = rows.reduce((total, row) => total + Number(row.n) - 1, 0)
          expect(repeats).toBeLessThanOrEqual(takeovers * SIZE.branches)
        } finally {
          await store.close()
        }
      } finally {
        await client.end()
      }
    }, 180_000)
  })
}
