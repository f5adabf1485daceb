// Rate limits shared by workers on one PostgreSQL database: two limiters (two workers' pools) on one
// database and one manual clock keep one sliding minute, and a Retry-After one of them saw holds the other.
import type { JournalLine } from '@locus/journal'
import { type AgentHost, type RateTicket, type TurnResult, defineWorkflow } from '@locus/runtime'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPostgresRateLimiter, enqueueRun, migrateDispatch, readQueues, startRunWorker } from '../src/index.js'
import { admin, databaseUrl, testDatabaseUrl, until } from './pg-test-database.js'

/** A clock that moves only when the test moves it. */
function manualClock() {
  let now = 1_000_000
  const sleepers: { at: number; wake: () => void }[] = []
  return {
    now: () => now,
    sleep: (ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve) => {
        if (!(ms > 0) || signal?.aborted === true) {
          resolve()
          return
        }
        const sleeper = { at: now + ms, wake: resolve }
        sleepers.push(sleeper)
        signal?.addEventListener('abort', () => {
          if (sleepers.includes(sleeper)) sleepers.splice(sleepers.indexOf(sleeper), 1)
          resolve()
        })
      }),
    /** Moves to the earliest sleeper and wakes every one due; false when none sleeps. */
    advanceToNextSleep() {
      if (sleepers.length === 0) return false
      now = Math.max(now, Math.min(...sleepers.map((one) => one.at)))
      for (const sleeper of sleepers.filter((one) => one.at <= now)) {
        sleepers.splice(sleepers.indexOf(sleeper), 1)
        sleeper.wake()
      }
      return true
    },
    advance(ms: number) {
      now += ms
    },
    sleeping: () => sleepers.length,
  }
}

const url = testDatabaseUrl
describe.skipIf(url === undefined)('rate limits shared on PostgreSQL', () => {
  const dbName = `locus_rate_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  const dbUrl = url === undefined ? '' : databaseUrl(url, dbName)
  const pools: pg.Pool[] = []
  const pool = () => {
    const created = new pg.Pool({ connectionString: dbUrl, max: 3 })
    // The database is dropped with (force) at the end: a connection still closing then hears the server's 57P01, which is expected, not a failure.
    created.on('error', () => undefined)
    pools.push(created)
    return created
  }

  beforeAll(async () => {
    if (url === undefined) return
    await admin(url, `create database ${dbName}`)
    await migrateDispatch(dbUrl)
  })
  afterAll(async () => {
    if (url === undefined) return
    await Promise.all(pools.map((one) => one.end()))
    await admin(url, `drop database if exists ${dbName} with (force)`)
  })

  /** Real ticks until every request asked is either granted or asleep: the clock only moves when no database work is under way. */
  async function quiet(clock: ReturnType<typeof manualClock>, asked: () => number, granted: () => number): Promise<void> {
    do await new Promise((resolve) => setTimeout(resolve, 2))
    while (granted() + clock.sleeping() < asked())
  }

  /** Settles `pending`, moving the clock sleep by sleep once nothing else is under way. */
  async function drive<T>(clock: ReturnType<typeof manualClock>, pending: Promise<T>, asked: () => number, granted: () => number): Promise<T> {
    const state = { done: false }
    void pending.finally(() => (state.done = true)).catch(() => undefined)
    while (!state.done) {
      await quiet(clock, asked, granted)
      clock.advanceToNextSleep()
    }
    return pending
  }

  it('two workers together start at most N requests in any 60 s, and every request starts', async () => {
    const clock = manualClock()
    const limits = [{ match: { provider: 'openai' }, requestsPerMinute: 3 }]
    const workers = [createPostgresRateLimiter({ pool: pool(), limits, clock }), createPostgresRateLimiter({ pool: pool(), limits, clock })]
    const starts: { at: number; worker: number; ticket: RateTicket }[] = []
    const pending: Promise<void>[] = []
    const gaps = [0, 0, 0, 0, 5_000, 0, 20_000, 30_000, 0, 40_000, 0]
    for (const [index, gap] of gaps.entries()) {
      clock.advance(gap)
      const worker = index % 2
      pending.push(
        (workers[worker] as (typeof workers)[number]).acquire({ provider: 'openai', model: 'gpt', tokens: 10 }).then((ticket) => {
          starts.push({ at: clock.now(), worker, ticket })
        }),
      )
      await quiet(clock, () => pending.length, () => starts.length)
    }
    await drive(clock, Promise.all(pending), () => pending.length, () => starts.length)
    expect(starts).toHaveLength(gaps.length)
    const times = starts.map((start) => start.at).sort((a, b) => a - b)
    for (let index = 0; index + 3 < times.length; index += 1) expect((times[index + 3] as number) - (times[index] as number)).toBeGreaterThanOrEqual(60_000)
    // Both workers started requests, and a request of one waited on the starts of the other.
    expect(new Set(starts.map((start) => start.worker))).toEqual(new Set([0, 1]))
    expect(starts.filter((start) => start.ticket.wait !== undefined).map((start) => start.ticket.wait?.limit)).toContain('openai/* rpm')
    // A request the limit does not match goes at once, whatever the limit's state.
    expect((await (workers[0] as (typeof workers)[number]).acquire({ provider: 'other', model: 'gpt' })).wait).toBeUndefined()
  })

  it("a 429's Retry-After seen by one worker closes the limit for the other", async () => {
    const clock = manualClock()
    const limits = [{ match: { model: 'm' }, requestsPerMinute: 1000 }]
    const first = createPostgresRateLimiter({ pool: pool(), limits, clock })
    const second = createPostgresRateLimiter({ pool: pool(), limits, clock })
    expect((await first.acquire({ provider: 'p', model: 'm' })).wait).toBeUndefined()
    await first.retryAfter({ provider: 'p', model: 'm' }, 2000)
    clock.advance(500)
    let granted = 0
    const ticket = await drive(clock, second.acquire({ provider: 'p', model: 'm' }).finally(() => (granted = 1)), () => 1, () => granted)
    expect(ticket.wait).toEqual({ limit: '*/m retry-after', waitedMs: 1500 })
    expect(clock.now()).toBe(1_000_000 + 2000)
  })

  it("a worker's run waits out the Retry-After a 429 gave another worker's run: rate_wait, no extra attempt", async () => {
    const seen: { prompt: string; at: number }[] = []
    const host: AgentHost = {
      name: 'loopback',
      openSession: () => ({
        transcript: () => [],
        prompt(text): Promise<TurnResult> {
          seen.push({ prompt: text, at: Date.now() })
          if (text !== 'first') return Promise.resolve({ text: 'fine', stopReason: 'end' })
          return Promise.resolve({
            text: '',
            stopReason: 'error',
            failureCause: 'provider-error',
            reason: 'HTTP 429',
            llmAttempts: [{ model: 'm', turn: 1, step: 1, attempt: 1, maxAttempts: 1, outcome: 'failed', durationMs: 1, streamed: false, code: 'rate_limited', status: 429, retryAfterMs: 3000 }],
          })
        },
      }),
    }
    const caller = defineWorkflow({
      name: 'caller',
      agents: { caller: { model: 'm' } },
      async run({ agent, input }) {
        try {
          return { answer: (await agent((input as { prompt: string }).prompt, { agent: 'caller' })).answer }
        } catch {
          return { limited: true }
        }
      },
    })
    const rateLimits = [{ match: { model: 'm' }, requestsPerMinute: 1000 }]
    const client = new pg.Client({ connectionString: dbUrl })
    await client.connect()
    const completed = (runId: string) =>
      until(`${runId} to complete`, async () => {
        const { rows } = await client.query<{ status: string }>('select status from locus_runs where run_id = $1', [runId])
        return rows[0]?.status === 'completed' ? true : undefined
      }, 20_000)
    try {
      // The first worker's run meets the 429; the worker then stops, so what holds the second is in the database.
      const first = await startRunWorker({ connectionString: dbUrl, workflows: [caller], host, rateLimits, leaseMs: 2000 })
      await enqueueRun(client, { runId: 'rl-first', workflow: caller, input: { prompt: 'first' } })
      await completed('rl-first')
      await first.stop()
      const second = await startRunWorker({ connectionString: dbUrl, workflows: [caller], host, rateLimits, leaseMs: 2000 })
      try {
        await enqueueRun(client, { runId: 'rl-second', workflow: caller, input: { prompt: 'second' } })
        await completed('rl-second')
      } finally {
        await second.stop()
      }
      const at = (prompt: string) => seen.find((one) => one.prompt === prompt)?.at ?? Number.NaN
      expect(at('second') - at('first')).toBeGreaterThanOrEqual(2900)
      const lines = (await client.query<{ line: JournalLine }>(`select line from locus_journal where run_id = 'rl-second' order by execution_id, seq`)).rows.map((row) => row.line)
      const waits = lines.filter((line) => line.type === 'rate_wait')
      expect(waits).toEqual([expect.objectContaining({ limit: '*/m retry-after', callId: 'call-1-a1' })])
      expect((waits[0] as { waitedMs: number }).waitedMs).toBeGreaterThan(0)
      // The wait spent no attempt: one agent_start, attempt 1.
      expect(lines.filter((line) => line.type === 'agent_start').map((line) => (line as { attempt: number }).attempt)).toEqual([1])
    } finally {
      await client.end()
    }
  })

  it('readQueues (locus queues --database-url) lists a key whose run waits for a worker', async () => {
    const keyed = defineWorkflow({ name: 'keyed', concurrency: [{ key: () => 'tenant:acme', limit: 1 }], run: () => ({ ok: true }) })
    const client = new pg.Client({ connectionString: dbUrl })
    await client.connect()
    try {
      await enqueueRun(client, { runId: 'rq-waiting', workflow: keyed, input: {} })
    } finally {
      await client.end()
    }
    const queues = await readQueues(dbUrl)
    expect(queues).toEqual([{ key: 'tenant:acme', running: 0, waiting: 1, oldestWaitMs: expect.any(Number) as number }])
  })
})
