import { type RateLimit, type RateLimiter, type RateLimitSnapshot, type RateWindow, type RunOptions, checkRateLimits, rateLimitDelay, rateLimitName, sleepWakeable } from '@locus/runtime'
import type pg from 'pg'

type RetryClock = NonNullable<RunOptions['clock']>

/** The system clock: `Date.now()`, and a timer that an abort clears. */
const systemClock: RetryClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, ms))
      signal?.addEventListener(
        'abort',
        () => {
          clearTimeout(timer)
          resolve()
        },
        { once: true },
      )
    }),
}

/** Options of {@link createPostgresRateLimiter}. */
export interface PostgresRateLimiterOptions {
  readonly pool: pg.Pool
  readonly limits: readonly RateLimit[]
  /** @default 'public' */
  readonly schema?: string | undefined
  /**
   * Where times are read and waits are slept: every process sharing the
   * limits must read the same scale (the system clock, `Date.now()`, by
   * default; a shared manual clock in tests).
   */
  readonly clock?: RetryClock | undefined
}

const WINDOW_MS = 60_000

/**
 * A {@link RateLimiter} shared by every process on one PostgreSQL database
 * (migration 14): each limit's requests of the last minute are rows of
 * `locus_rate_requests`, and a provider's `Retry-After` the `closed_until_ms`
 * of its `locus_rate_buckets` row. A request locks the rows of the limits it
 * matches (in name order, so two requests never deadlock), prunes what is a
 * minute old, applies the same rule as the in-process limiter
 * (`rateLimitDelay`) and, when every limit has room, records its start and
 * worst-case tokens in the same transaction; otherwise it sleeps on the clock
 * for as long as the rule says, and asks again. A settled request's row is
 * moved to its answer's time, so it counts for a minute after that.
 */
export function createPostgresRateLimiter(options: PostgresRateLimiterOptions): RateLimiter {
  const limits = checkRateLimits(options.limits)
  const schema = options.schema ?? 'public'
  const clock = options.clock ?? systemClock
  const { pool } = options
  const named = limits.map((limit) => ({ limit, name: rateLimitName(limit) }))
  const waiting = new Map<string, Set<{ readonly since: number }>>()
  const started = new Map<string, number>()
  const sleepers = new Set<AbortController>()
  const matching = (request: { readonly provider: string; readonly model: string }) =>
    named
      .filter(({ limit }) => (limit.match.provider === undefined || limit.match.provider === request.provider) && (limit.match.model === undefined || limit.match.model === request.model))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

  /** One try: the longest wait the matching limits ask for, or the ids of the rows that recorded the request. */
  async function attempt(mine: ReturnType<typeof matching>, tokens: number): Promise<{ readonly ms: number; readonly name: string } | { readonly ids: string[] }> {
    const client = await pool.connect()
    try {
      await client.query('begin')
      const names = mine.map(({ name }) => name)
      await client.query(`insert into "${schema}".locus_rate_buckets (name) select unnest($1::text[]) on conflict do nothing`, [names])
      // Every matching limit locked (in name order) before the clock is read: no other process records a start meanwhile.
      const { rows: buckets } = await client.query<{ name: string; closed_until_ms: string }>(
        `select name, closed_until_ms from "${schema}".locus_rate_buckets where name = any($1::text[]) order by name for update`,
        [names],
      )
      const now = clock.now()
      let longest = { ms: 0, name: '' }
      for (const { limit, name } of mine) {
        const bucket = buckets.filter((row) => row.name === name)
        await client.query(`delete from "${schema}".locus_rate_requests where limit_name = $1 and started_ms <= $2`, [name, now - WINDOW_MS])
        const { rows } = await client.query<{ started_ms: number; tokens: string }>(`select started_ms, tokens from "${schema}".locus_rate_requests where limit_name = $1 order by started_ms, id`, [name])
        const window: RateWindow = {
          starts: rows.map((row) => row.started_ms),
          charges: rows.map((row) => ({ at: row.started_ms, tokens: Number(row.tokens) })),
          closedUntil: Number(bucket[0]?.closed_until_ms ?? 0),
        }
        started.set(name, rows.length)
        const delay = rateLimitDelay(limit, window, now, tokens)
        if (delay.ms > longest.ms) longest = { ms: delay.ms, name: `${name} ${delay.kind}` }
      }
      if (longest.ms > 0) {
        await client.query('rollback')
        return longest
      }
      const ids: string[] = []
      for (const { name } of mine) {
        const { rows } = await client.query<{ id: string }>(`insert into "${schema}".locus_rate_requests (limit_name, started_ms, tokens) values ($1, $2, $3) returning id`, [name, now, Math.ceil(tokens)])
        ids.push(rows[0]?.id ?? '')
        started.set(name, (started.get(name) ?? 0) + 1)
      }
      await client.query('commit')
      return { ids }
    } catch (error) {
      await client.query('rollback').catch(() => undefined)
      throw error
    } finally {
      client.release()
    }
  }

  return {
    limits,
    async acquire(request) {
      const mine = matching(request)
      if (mine.length === 0) return { wait: undefined, settle: () => undefined }
      const tokens = Math.max(0, request.tokens ?? 0)
      const since = clock.now()
      const marker = { since }
      let blamed: string | undefined
      try {
        for (;;) {
          request.signal?.throwIfAborted()
          const outcome = await attempt(mine, tokens)
          if ('ids' in outcome) {
            const now = clock.now()
            return {
              wait: blamed === undefined ? undefined : { limit: blamed, waitedMs: Math.max(0, Math.round(now - since)) },
              settle: (used) => {
                // Counted from its answer from now on, as the in-process limiter does (RateTicket.settle).
                void pool
                  .query(`update "${schema}".locus_rate_requests set tokens = $2, started_ms = greatest(started_ms, $3) where id = any($1::bigint[])`, [
                    outcome.ids,
                    Math.max(0, Math.ceil(used)),
                    Math.floor(clock.now()),
                  ])
                  .catch(() => undefined)
              },
            }
          }
          blamed = outcome.name
          for (const { name } of mine) {
            let set = waiting.get(name)
            if (set === undefined) waiting.set(name, (set = new Set()))
            set.add(marker)
          }
          await sleepWakeable(clock, outcome.ms, request.signal, sleepers)
        }
      } finally {
        for (const { name } of mine) waiting.get(name)?.delete(marker)
      }
    },
    // Resolves once the closing is stored (a failed write is dropped: the provider's own 429s still hold the caller back).
    async retryAfter(request, ms) {
      if (!(ms > 0)) return
      const until = Math.ceil(clock.now() + ms)
      const names = matching(request).map(({ name }) => name)
      if (names.length === 0) return
      await pool
        .query(
          `insert into "${schema}".locus_rate_buckets (name, closed_until_ms) select unnest($1::text[]), $2
           on conflict (name) do update set closed_until_ms = greatest("${schema}".locus_rate_buckets.closed_until_ms, excluded.closed_until_ms)`,
          [names, until],
        )
        .then(() => {
          // This process's waiters ask again at once; other processes' on their next try.
          for (const sleeper of [...sleepers]) sleeper.abort()
        })
        .catch(() => undefined)
    },
    snapshot(): RateLimitSnapshot[] {
      const now = clock.now()
      return named.map(({ name }) => {
        const set = waiting.get(name) ?? new Set()
        let oldest: number | undefined
        for (const waiter of set) oldest = oldest === undefined ? waiter.since : Math.min(oldest, waiter.since)
        return { limit: name, started: started.get(name) ?? 0, waiting: set.size, oldestWaitMs: oldest === undefined ? 0 : Math.max(0, Math.round(now - oldest)), closedForMs: 0 }
      })
    },
  }
}
