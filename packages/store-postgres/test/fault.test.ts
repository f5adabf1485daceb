// The fault test of issue #37, on a PostgreSQL cluster of its own (so restarting it disturbs no other
// test): three worker processes share runs whose tool appends to a ledger file before it acts; in each
// sample busy workers get SIGKILL, one gets SIGSTOP past its lease and SIGCONT, and PostgreSQL is
// restarted once (pg_ctl restart -m fast). Then: every run completed right with one run_end, no call
// whose start a successor fenced ran again, no worker died of the restart, seq contiguous, one writer
// per execution. CI runs one small sample; LOCUS_FAULT_FULL=1 runs three large ones.
import { execFileSync, type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { JournalLine } from '@locus/journal'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { enqueueRun, migrateDispatch } from '../src/index.js'
import { postgresFor } from './postgres-for.js'

const base = postgresFor('PostgreSQL fault test: set LOCUS_TEST_PG_URL to run it (it starts a cluster of its own)')
const full = process.env.LOCUS_FAULT_FULL === '1'
const SIZE = full ? { samples: 3, runs: 60, rounds: 20, kills: 30 } : { samples: 1, runs: 12, rounds: 20, kills: 2 }
const LEASE_MS = 1000
const WORKERS = 3
const fixture = fileURLToPath(new URL('./fixtures/fault-worker.ts', import.meta.url))
const services = fileURLToPath(new URL('../../../scripts/ci-services.sh', import.meta.url))

interface LedgerEntry {
  readonly runId: string
  readonly toolCallId: string
  readonly attempt: number
  readonly pid: number
}

interface Worker {
  readonly child: ChildProcess
  readonly ready: Promise<void>
  stderr: string
  /** Set when the test itself killed it. */
  killedByTest: boolean
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

if (base !== undefined) {
  describe('exactly once through kills, a pause past the lease and a PostgreSQL restart', () => {
    const pgDir = mkdtempSync(join(tmpdir(), 'locus-fault-pg-'))
    const port = String(56_100 + (process.pid % 800))
    const env = { ...process.env, LOCUS_PG_DIR: pgDir, LOCUS_PG_PORT: port }
    const dbUrl = `postgres://locus@127.0.0.1:${port}/locus_test`
    const ledger = join(mkdtempSync(join(tmpdir(), 'locus-fault-ledger-')), 'ledger.jsonl')
    const workers: Worker[] = []

    beforeAll(() => {
      // Postgres refuses to run as root: the script starts it as the postgres user, who must own the directory.
      execFileSync('bash', [services, 'start'], { env, stdio: ['ignore', 'ignore', 'pipe'] })
    }, 60_000)
    afterAll(async () => {
      for (const worker of workers) {
        worker.child.kill('SIGCONT')
        worker.child.kill('SIGKILL')
      }
      await Promise.all(workers.filter((worker) => worker.child.exitCode === null && worker.child.signalCode === null).map((worker) => once(worker.child, 'exit')))
      execFileSync('bash', [services, 'stop'], { env, stdio: 'ignore' })
      rmSync(pgDir, { recursive: true, force: true })
    }, 60_000)

    function startWorker(): Worker {
      const child = spawn(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', fixture, dbUrl, String(LEASE_MS), ledger], { stdio: ['ignore', 'pipe', 'pipe'] })
      const worker: Worker = {
        child,
        stderr: '',
        killedByTest: false,
        ready: new Promise<void>((resolve, reject) => {
          child.stdout.on('data', (chunk: Buffer) => {
            if (chunk.toString().includes('ready')) resolve()
          })
          child.once('exit', (code, signal) => {
            reject(new Error(`worker exited (${String(code ?? signal)}) before it was ready: ${worker.stderr}`))
          })
        }),
      }
      worker.ready.catch(() => undefined)
      child.stderr.on('data', (chunk: Buffer) => {
        worker.stderr += chunk.toString()
      })
      workers.push(worker)
      return worker
    }
    const alive = (worker: Worker) => worker.child.exitCode === null && worker.child.signalCode === null
    const living = () => workers.filter(alive)

    function readLedger(): LedgerEntry[] {
      let text = ''
      try {
        text = readFileSync(ledger, 'utf8')
      } catch {
        return []
      }
      return text
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as LedgerEntry)
    }

    /** The living worker whose tool acted last: a busy one. */
    function busiest(exclude?: Worker): Worker | undefined {
      const candidates = living().filter((worker) => worker !== exclude)
      const recent = readLedger().reverse()
      for (const entry of recent) {
        const found = candidates.find((worker) => worker.child.pid === entry.pid)
        if (found !== undefined) return found
      }
      return candidates[0]
    }

    it(
      `completes ${String(SIZE.samples * SIZE.runs)} runs in ${String(SIZE.samples)} sample(s) on ${String(WORKERS)} workers; nothing fenced runs again`,
      async () => {
        await migrateDispatch(dbUrl)
        writeFileSync(ledger, '')
        await Promise.all(Array.from({ length: WORKERS }, () => startWorker().ready))
        const connect = async (): Promise<pg.Client> => {
          const fresh = new pg.Client({ connectionString: dbUrl })
          fresh.on('error', () => undefined)
          await fresh.connect()
          return fresh
        }
        let db = await connect()
        const query = async <R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> => {
          for (let attempt = 0; ; attempt += 1) {
            try {
              return await db.query<R>(text, values)
            } catch (error) {
              if (attempt > 50) throw error
              await db.end().catch(() => undefined)
              await sleep(200)
              db = await connect().catch(() => db)
            }
          }
        }
        const allRunIds: string[] = []
        let pauses = 0
        let restarts = 0
        let kills = 0
        try {
          for (let sample = 0; sample < SIZE.samples; sample += 1) {
            const runIds = Array.from({ length: SIZE.runs }, (_, index) => `fault-${String(sample)}-${String(index)}`)
            allRunIds.push(...runIds)
            for (const runId of runIds) await enqueueRun(db, { runId, workflow: 'ledgered', input: { rounds: SIZE.rounds } })
            const open = async () => Number((await query<{ n: string }>(`select count(*) as n from locus_runs where status <> 'completed' and run_id like $1`, [`fault-${String(sample)}-%`])).rows[0]?.n)
            const leased = async () => Number((await query<{ n: string }>('select count(*) as n from locus_leases where owner is not null and expires_at > clock_timestamp()')).rows[0]?.n)
            const killBusy = async (): Promise<void> => {
              const victim = busiest()
              if (victim === undefined) return
              victim.killedByTest = true
              victim.child.kill('SIGKILL')
              await once(victim.child, 'exit').catch(() => undefined)
              kills += 1
              startWorker()
            }
            await until(async () => (await leased()) > 0)
            // Half the kills first, then the pause, the restart, and the other half.
            const firstKills = Math.ceil(SIZE.kills / 2)
            for (let index = 0; index < firstKills && (await open()) > 0; index += 1) {
              await sleep(150 + Math.random() * 250)
              await killBusy()
            }
            await until(async () => (await leased()) > 0 || (await open()) === 0)
            const paused = busiest()
            if (paused !== undefined && (await open()) > 0) {
              paused.child.kill('SIGSTOP')
              await sleep(LEASE_MS * 2.5)
              paused.child.kill('SIGCONT')
              pauses += 1
            }
            await sleep(200)
            execFileSync('bash', [services, 'restart'], { env, stdio: ['ignore', 'ignore', 'pipe'] })
            restarts += 1
            for (let index = firstKills; index < SIZE.kills && (await open()) > 0; index += 1) {
              await sleep(200 + Math.random() * 300)
              await killBusy()
            }
            await until(async () => (await open()) === 0, full ? 600_000 : 90_000)
          }

          // No worker died of the restart (or of anything else): only those the test killed are gone.
          const died = workers.filter((worker) => !worker.killedByTest && !alive(worker))
          expect(died.map((worker) => worker.stderr)).toEqual([])
          expect(kills).toBe(SIZE.samples * SIZE.kills)
          expect(pauses).toBe(SIZE.samples)
          expect(restarts).toBe(SIZE.samples)

          const committedStarts = new Map<string, number>()
          let takeovers = 0
          for (const runId of allRunIds) {
            const { rows: executions } = await query<{ execution_id: string }>(
              `select execution_id from locus_executions where run_id = $1 and kind in ('root', 'resume') order by (kind = 'root') desc, position`,
              [runId],
            )
            const lines: JournalLine[][] = []
            for (const { execution_id: executionId } of executions) {
              const { rows } = await query<{ line: JournalLine }>('select line from locus_journal where run_id = $1 and execution_id = $2 order by seq', [runId, executionId])
              lines.push(rows.map((row) => row.line))
            }
            const written = lines.filter((own) => own.length > 0)
            // Exactly one run_end in the run, in its last execution, completed with the right sum.
            const ends = written.flatMap((own) => own.filter((line) => line.type === 'run_end'))
            expect(ends, runId).toHaveLength(1)
            expect(written.at(-1)?.at(-1)).toMatchObject({ type: 'run_end', disposition: 'completed' })
            const expectedSum = Array.from({ length: SIZE.rounds }, (_, round) => round + 'done'.length).reduce((a, b) => a + b, 0)
            expect((ends[0] as { result?: unknown }).result).toEqual({ ok: true, sum: expectedSum })
            // seq runs 1..n in every execution; one writer each: one epoch announced per execution, rising.
            for (const own of written) expect(own.map((line) => line.seq)).toEqual(own.map((_, index) => index + 1))
            const epochs = written.map((own) => own.filter((line) => line.type === 'lease_acquired' || line.type === 'worker_takeover').map((line) => (line as { epoch: number }).epoch))
            for (const announced of epochs) expect(announced).toHaveLength(1)
            const numbers = epochs.map((announced) => announced[0] ?? 0)
            expect(numbers).toEqual([...numbers].sort((a, b) => a - b))
            expect(new Set(numbers).size).toBe(numbers.length)
            takeovers += written.flat().filter((line) => line.type === 'worker_takeover').length
            for (const own of written) {
              // A call served from the journal writes a start line too, but its end says replayed: it dispatched nothing.
              const replayed = new Set(own.flatMap((line) => (line.type === 'tool_end' && line.replayed === true ? [`${line.toolCallId} ${String(line.attempt)}`] : [])))
              for (const line of own) {
                if (line.type !== 'tool_start' || replayed.has(`${line.toolCallId} ${String(line.attempt)}`)) continue
                const key = `${runId} ${line.toolCallId} ${String(line.attempt)}`
                committedStarts.set(key, (committedStarts.get(key) ?? 0) + 1)
              }
            }
          }
          expect(takeovers).toBeGreaterThan(0)
          // The ledger: every dispatch had its own committed start line. A stale worker that ran a call
          // again after a successor fenced its start would leave one ledger line more than committed starts.
          const dispatched = new Map<string, number>()
          for (const entry of readLedger()) {
            const key = `${entry.runId} ${entry.toolCallId} ${String(entry.attempt)}`
            dispatched.set(key, (dispatched.get(key) ?? 0) + 1)
          }
          const unfenced = [...dispatched].filter(([key, count]) => count > (committedStarts.get(key) ?? 0))
          expect(unfenced).toEqual([])
          // Every committed call ran: each round's tool acted at least once in every run.
          expect(new Set([...dispatched.keys()].map((key) => key.split(' ').slice(0, 2).join(' '))).size).toBe(allRunIds.length * SIZE.rounds)
          console.log(
            `fault test: ${String(allRunIds.length)} runs, ${String(kills)} SIGKILLs, ${String(pauses)} SIGSTOP(s), ${String(restarts)} restart(s), ${String(takeovers)} takeovers, ` +
              `${String([...dispatched.values()].reduce((a, b) => a + b, 0))} tool dispatches for ${String(dispatched.size)} started attempts`,
          )
        } finally {
          await db.end().catch(() => undefined)
        }
      },
      full ? 1_800_000 : 150_000,
    )
  })
}

async function until(probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${String(timeoutMs)} ms`)
    await sleep(100)
  }
}
