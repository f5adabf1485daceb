import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import type { JournalLine } from '@locus/journal'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRuntime } from '@locus/runtime'
import { createPostgresRunStore, enqueueRun, migrateDispatch, requestCancel } from '../src/index.js'
import { admin, databaseUrl, until } from './pg-test-database.js'
import { postgresFor } from './postgres-for.js'

const url = postgresFor('PostgreSQL pause and cancel tests: set LOCUS_TEST_PG_URL to run them')
// Long enough that a loaded CI machine does not lapse a live worker's lease between heartbeats.
const LEASE_MS = 2000
const fixture = fileURLToPath(new URL('./fixtures/kill-worker.ts', import.meta.url))

function startWorker(dbUrl: string): { child: ChildProcess; ready: Promise<void>; stderr: () => string } {
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
  return { child, ready, stderr: () => stderr }
}

if (url !== undefined) {
  describe('a paused worker and a cancel across workers', () => {
    const dbName = `locus_pause_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    const dbUrl = databaseUrl(url, dbName)
    const workers = new Set<ChildProcess>()
    let client: pg.Client

    const stderrOf = new Map<ChildProcess, () => string>()
    const spawnOne = async (): Promise<ChildProcess> => {
      const worker = startWorker(dbUrl)
      workers.add(worker.child)
      stderrOf.set(worker.child, worker.stderr)
      await worker.ready
      return worker.child
    }
    const status = async (runId: string): Promise<string | undefined> =>
      (await client.query<{ status: string }>('select status from locus_runs where run_id = $1', [runId])).rows[0]?.status
    const lease = async (runId: string) => (await client.query<{ owner: string | null; epoch: string }>('select owner, epoch from locus_leases where run_id = $1', [runId])).rows[0]

    beforeAll(async () => {
      await admin(url, `create database ${dbName}`)
      await migrateDispatch(dbUrl)
      await admin(dbUrl, 'create table kill_tool_calls (run_id text not null, branch int not null, round int not null, pid int not null, at timestamptz not null default clock_timestamp())')
      client = new pg.Client({ connectionString: dbUrl })
      await client.connect()
    })
    afterAll(async () => {
      await client.end()
      for (const child of workers) {
        child.kill('SIGCONT')
        child.kill('SIGKILL')
      }
      await Promise.all([...workers].filter((child) => child.exitCode === null && child.signalCode === null).map((child) => once(child, 'exit')))
      await admin(url, `drop database if exists ${dbName} with (force)`)
    })

    it('lets a worker stopped with SIGSTOP past its lease write nothing once continued, while its successor completes the run', async () => {
      const first = await spawnOne()
      const runId = 'paused-run'
      await enqueueRun(client, { runId, workflow: 'fanout', input: { branches: 2, rounds: 12 } })
      await until('the first tool call', async () => ((await client.query('select 1 from kill_tool_calls where run_id = $1', [runId])).rowCount === 0 ? undefined : true))
      first.kill('SIGSTOP')
      // Under load the first worker may already have renewed or re-taken its own lease; the takeover
      // to wait for is the one by another owner, past the epoch the stopped worker holds.
      const stopped = await lease(runId)
      expect(stopped?.owner).toBeTruthy()
      const second = await spawnOne()
      // The successor takes the run once the stopped worker's lease lapses.
      await until('the takeover', async () => {
        const now = await lease(runId)
        return now?.owner !== null && now?.owner !== undefined && now.owner !== stopped?.owner && Number(now.epoch) > Number(stopped?.epoch) ? true : undefined
      })
      first.kill('SIGCONT')
      await until('the run to end', async () => ((await status(runId)) === 'running' ? undefined : true), 60_000).catch(async (error: unknown) => {
        // Say where the run stands, so a timeout under load can be told from a lost run.
        const jobs = await client.query<Record<string, unknown>>('select key, attempts, locked_by, locked_at, run_at, last_error from graphile_worker.jobs')
        const leases = await client.query<Record<string, unknown>>('select * from locus_leases where run_id = $1', [runId])
        throw new Error(
          `${(error as Error).message}; lease ${JSON.stringify(leases.rows)}; ` +
            `jobs ${JSON.stringify(jobs.rows)}; first worker stderr: ${stderrOf.get(first)?.() ?? ''}; second: ${stderrOf.get(second)?.() ?? ''}`,
        )
      })
      expect(await status(runId)).toBe('completed')

      const store = createPostgresRunStore({ connectionString: dbUrl, migrate: false })
      try {
        const executions = await store.listExecutions(runId)
        const lines: JournalLine[][] = []
        for (const execution of executions) {
          const own: JournalLine[] = []
          for await (const line of store.readLines(execution)) own.push(line)
          lines.push(own)
        }
        // The successor's execution opens with its takeover of the stopped worker's epoch.
        const taken = lines.findIndex((own) => own.some((line) => line.type === 'worker_takeover' && line.owner !== stopped?.owner))
        expect(taken).toBeGreaterThanOrEqual(1)
        const takeover = lines[taken]?.find((line) => line.type === 'worker_takeover')
        expect(takeover).toMatchObject({ previousOwner: stopped?.owner, previousEpoch: Number(stopped?.epoch) })
        expect((takeover as { epoch: number }).epoch).toBeGreaterThan(Number(stopped?.epoch))
        // Nothing of the stopped worker's executions was committed after the successor's first line.
        const takenAt = lines[taken]?.[0]?.ts ?? ''
        for (const own of lines.slice(0, taken)) {
          for (const line of own) expect(line.ts <= takenAt).toBe(true)
          expect(own.some((line) => line.type === 'run_end')).toBe(false)
        }
        const live = lines.flat().filter((line) => line.type === 'tool_end' && line.status === 'completed' && line.replayed !== true)
        expect(live).toHaveLength(2 * 12)
      } finally {
        await store.close()
      }
      // The continued worker is alive and still serves; it just lost that run.
      expect(first.exitCode, `the continued worker exited; its stderr: ${stderrOf.get(first)?.() ?? ''}`).toBeNull()
      second.kill('SIGKILL')
      await once(second, 'exit')
    }, 120_000)

    it('cancels a run held by another worker process', async () => {
      const runId = 'cancelled-run'
      await enqueueRun(client, { runId, workflow: 'fanout', input: { branches: 2, rounds: 40 } })
      await until('the run to be leased', async () => ((await lease(runId))?.owner ? true : undefined))
      expect(await requestCancel(client, runId, 'public', { reason: 'the operator stopped it', by: 'key-0a1b2c3d' })).toBe(true)
      await until('the run to end', async () => ((await status(runId)) === 'running' ? undefined : true))
      expect(await status(runId)).toBe('cancelled')
      // The worker that held the run journaled who asked and why, before run_end.
      const journaled = await client.query<{ line: JournalLine }>(
        "select line from locus_journal where run_id = $1 and line->>'type' in ('run_cancel_requested', 'run_end') order by execution_id, seq",
        [runId],
      )
      expect(journaled.rows.map((row) => row.line)).toEqual([
        expect.objectContaining({ type: 'run_cancel_requested', reason: 'the operator stopped it', by: 'key-0a1b2c3d' }),
        expect.objectContaining({ type: 'run_end', disposition: 'cancelled' }),
      ])
      const { rows } = await client.query<{ n: string }>('select count(*) as n from kill_tool_calls where run_id = $1', [runId])
      expect(Number(rows[0]?.n)).toBeLessThan(2 * 40)
    }, 60_000)

    it('resumes a run whose deferral was answered while no worker held it, and hands a held run an answer from another process', async () => {
      const runId = 'approval-run'
      const openDeferral = async (step: string): Promise<string> =>
        until(`the ${step} deferral`, async () => {
          const { rows } = await client.query<{ id: string }>(
            `select line->>'deferredId' as id from locus_journal where run_id = $1 and line->>'type' = 'deferred_open' and line->'args'->>'step' = $2`,
            [runId, step],
          )
          return rows[0]?.id
        })
      // Only this test's workers: one left alive by an earlier test would take the run and keep its lease.
      for (const child of workers) {
        child.kill('SIGCONT')
        child.kill('SIGKILL')
      }
      await Promise.all([...workers].filter((child) => child.exitCode === null && child.signalCode === null).map((child) => once(child, 'exit')))
      const first = await spawnOne()
      await enqueueRun(client, { runId, workflow: 'approval', input: { amount: 120 } })
      const managerId = await openDeferral('manager')
      // The worker dies while the run waits; once its lease lapses nobody holds the run.
      first.kill('SIGKILL')
      await once(first, 'exit')
      await until('the dead worker\'s lease to lapse', async () => {
        const { rows } = await client.query<{ expired: boolean }>('select expires_at <= clock_timestamp() as expired from locus_leases where run_id = $1', [runId])
        return rows[0]?.expired === true ? true : undefined
      })
      const answers = createPostgresRunStore({ connectionString: dbUrl, migrate: false, maxConnections: 2 })
      try {
        const runtime = createRuntime({ store: answers, workflows: [] })
        expect(await runtime.pendingDeferrals(runId)).toMatchObject([{ deferredId: managerId, tool: 'approve' }])
        expect(await runtime.answerDeferred(runId, managerId, { kind: 'resolved', result: { approved: true, by: 'manager' } })).toEqual({ ok: true, status: 'stored' })
        // Kept, and final: a repeat is recognised, a different answer refused.
        expect(await runtime.answerDeferred(runId, managerId, { kind: 'resolved', result: { approved: true, by: 'manager' } })).toEqual({ ok: true, status: 'already-answered' })
        expect(await runtime.answerDeferred(runId, managerId, { kind: 'resolved', result: { approved: false, by: 'someone else' } })).toMatchObject({ ok: false, status: 'conflict' })
        expect(await status(runId)).toBe('running')
        // A new worker takes the run over, finds the kept answer at once, and goes on to the next deferral.
        await spawnOne()
        const financeId = await openDeferral('finance')
        expect((await lease(runId))?.owner).toBeTruthy()
        // Answered from this process while the new worker holds the run: it looks in the store while it waits.
        expect(await runtime.answerDeferred(runId, financeId, { kind: 'resolved', result: { approved: true, by: 'finance' } })).toEqual({ ok: true, status: 'stored' })
        await until('the run to end', async () => ((await status(runId)) === 'running' ? undefined : true))
        expect(await status(runId)).toBe('completed')
        const { rows } = await client.query<{ line: JournalLine }>('select line from locus_journal where run_id = $1 order by execution_id, seq', [runId])
        const lines = rows.map((row) => row.line)
        // Each deferral opened once, over both executions, and settled once with the kept answer.
        expect(lines.flatMap((line) => (line.type === 'deferred_open' ? [line.deferredId] : []))).toEqual([managerId, financeId])
        expect(lines.filter((line) => line.type === 'deferred_settled')).toMatchObject([
          { deferredId: managerId, outcome: 'resolved', result: { by: 'manager' } },
          { deferredId: financeId, outcome: 'resolved', result: { by: 'finance' } },
        ])
        expect(lines.some((line) => line.type === 'worker_takeover')).toBe(true)
        expect(lines.find((line) => line.type === 'run_end')).toMatchObject({ disposition: 'completed', result: { ok: true, by: ['manager', 'finance'] } })
        const { rows: calls } = await client.query<{ round: number }>('select round from kill_tool_calls where run_id = $1 order by round', [runId])
        expect(calls.map((call) => call.round)).toEqual([0, 1])
      } finally {
        await answers.close()
      }
    }, 90_000)
  })
}
