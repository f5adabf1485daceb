import { type RetryClock, systemClock } from '@locus/retry'
import { RuntimeInputError } from './errors.js'
import type { QueueSnapshot } from './flow-control.js'

/** Which LLM requests a rate limit counts: every field given must equal the request's. */
export interface RateLimitMatch {
  /** The request's provider: the host's `settings.provider`, else the part of the model id before `/`, else the host's name. */
  readonly provider?: string
  /** The request's model id, as the role's `model` (or the host's) names it. */
  readonly model?: string
}

/**
 * A shared limit on LLM requests: at most `requestsPerMinute` requests start,
 * and at most `tokensPerMinute` tokens are charged, in any 60 s of the clock,
 * across every call sharing the limiter. At least one of the two must be given.
 */
export interface RateLimit {
  readonly match: RateLimitMatch
  /** A positive whole number. */
  readonly requestsPerMinute?: number
  /** A positive whole number: each request charges its worst case (input and `maxOutputTokens`) before it is sent, settled to its real usage after. */
  readonly tokensPerMinute?: number
}

/** One request asking a {@link RateLimiter} for room. */
export interface RateRequest {
  readonly provider: string
  readonly model: string
  /** The request's worst case in tokens, charged against token limits until it is settled. @default 0 */
  readonly tokens?: number | undefined
  /** Aborting it withdraws a request still waiting: its promise rejects with the signal's reason. */
  readonly signal?: AbortSignal | undefined
}

/** How long a request waited, and on which limit (`provider/model` of its match, with `rpm`, `tpm` or `retry-after`). */
export interface RateWait {
  readonly limit: string
  readonly waitedMs: number
}

/** The room a request was given. */
export interface RateTicket {
  /** Undefined when the request went at once. */
  readonly wait: RateWait | undefined
  /**
   * The request was answered: replaces the worst case charged against token
   * limits with the tokens it really used, and keeps it in its limits' minute
   * until a minute after now. A provider counts a request when it arrives,
   * which may be well after it was let go, so a minute counted from the answer
   * keeps the provider's count within the limit too.
   */
  settle(tokens: number): void
}

/** One limit in `runtime.queues()`: requests started in the last minute, calls waiting, the oldest wait. */
export interface RateLimitSnapshot {
  readonly limit: string
  readonly started: number
  readonly waiting: number
  readonly oldestWaitMs: number
  /** Clock milliseconds left of a provider's `Retry-After`; 0 when open. */
  readonly closedForMs: number
}

/** Rate limits shared by every call that asks it: one per process, or one per runtime. */
export interface RateLimiter {
  readonly limits: readonly RateLimit[]
  /** Waits until every limit matching the request has room, then charges it; resolves at once when none matches. */
  acquire(request: RateRequest): Promise<RateTicket>
  /**
   * A provider answered 429 with `Retry-After`: every limit matching the
   * request is closed for `ms`, for every call sharing the limiter. Resolves
   * once the closing is kept (at once in process); it never rejects.
   */
  retryAfter(request: { readonly provider: string; readonly model: string }, ms: number): Promise<void>
  snapshot(): RateLimitSnapshot[]
}

const WINDOW_MS = 60_000

function show(value: unknown): string {
  const json = JSON.stringify(value) as string | undefined
  return json ?? typeof value
}

/**
 * Checks rate limits where they are declared: each one an object with a
 * `match` (`provider` and `model` non-empty strings when given), and at least
 * one of `requestsPerMinute` and `tokensPerMinute`, each a positive whole number.
 *
 * @throws RuntimeInputError `RUN_OPTIONS_INVALID` naming the limit and the field
 */
export function checkRateLimits(value: unknown): RateLimit[] {
  const refuse = (issue: string): never => {
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `Invalid rate limit: ${issue}.`, [issue])
  }
  if (value === undefined) return []
  if (!Array.isArray(value)) refuse('rateLimits must be an array of { match: { provider?, model? }, requestsPerMinute?, tokensPerMinute? }')
  return (value as readonly unknown[]).map((entry, index) => {
    const where = `rateLimits[${String(index)}]`
    if (typeof entry !== 'object' || entry === null) refuse(`${where} must be { match, requestsPerMinute?, tokensPerMinute? }`)
    const { match, requestsPerMinute, tokensPerMinute } = entry as Record<string, unknown>
    if (typeof match !== 'object' || match === null || Array.isArray(match)) refuse(`${where}.match must be an object { provider?, model? } ({} matches every request)`)
    for (const field of ['provider', 'model'] as const) {
      const given = (match as Record<string, unknown>)[field]
      if (given !== undefined && (typeof given !== 'string' || given.length === 0)) refuse(`${where}.match.${field} must be a non-empty string, not ${show(given)}`)
    }
    if (requestsPerMinute === undefined && tokensPerMinute === undefined) refuse(`${where} limits nothing: give requestsPerMinute, tokensPerMinute or both`)
    for (const [field, given] of [['requestsPerMinute', requestsPerMinute], ['tokensPerMinute', tokensPerMinute]] as const) {
      if (given !== undefined && (typeof given !== 'number' || !Number.isSafeInteger(given) || given < 1)) refuse(`${where}.${field} must be a positive whole number, not ${show(given)}`)
    }
    return entry as RateLimit
  })
}

const RATE_LIMIT_FORM = 'comma-separated key=value pairs: provider=<name>, model=<id> (each optional; a missing one matches any), rpm=<requests per minute>, tpm=<tokens per minute> (at least one), such as "provider=openai,model=gpt-4o-mini,rpm=60"'

/**
 * Reads one rate limit written as text (the CLI's `--rate-limit`):
 * `provider=openai,model=gpt-4o-mini,rpm=60,tpm=200000`. `provider` and
 * `model` narrow what it matches (left out, they match any); `rpm` and `tpm`
 * (or `requestsPerMinute`, `tokensPerMinute`) are the limits, at least one.
 *
 * @throws RuntimeInputError `RUN_OPTIONS_INVALID` naming the text and the form it should have
 * @example
 * ```ts
 * parseRateLimit('model=gpt-4o-mini,rpm=60') // { match: { model: 'gpt-4o-mini' }, requestsPerMinute: 60 }
 * ```
 */
export function parseRateLimit(text: string): RateLimit {
  const refuse = (issue: string): never => {
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `Invalid rate limit "${text}": ${issue}. Write it as ${RATE_LIMIT_FORM}.`, [`rate limit "${text}": ${issue}`])
  }
  const match: { provider?: string; model?: string } = {}
  const limits: { requestsPerMinute?: number; tokensPerMinute?: number } = {}
  const seen = new Set<string>()
  for (const part of text.split(',')) {
    const equals = part.indexOf('=')
    if (equals <= 0) refuse(`"${part.trim()}" is not key=value`)
    const key = part.slice(0, equals).trim()
    const value = part.slice(equals + 1).trim()
    const field = key === 'rpm' ? 'requestsPerMinute' : key === 'tpm' ? 'tokensPerMinute' : key
    if (seen.has(field)) refuse(`${key} is given twice`)
    seen.add(field)
    if (field === 'provider' || field === 'model') {
      if (value === '') refuse(`${key} is empty`)
      match[field] = value
    } else if (field === 'requestsPerMinute' || field === 'tokensPerMinute') {
      const count = /^\d+$/.test(value) ? Number(value) : Number.NaN
      if (!Number.isSafeInteger(count) || count < 1) refuse(`${key} must be a positive whole number, not "${value}"`)
      limits[field] = count
    } else {
      refuse(`unknown key "${key}"`)
    }
  }
  if (limits.requestsPerMinute === undefined && limits.tokensPerMinute === undefined) refuse('it limits nothing: give rpm, tpm or both')
  return { match, ...limits }
}

/** The name a limit's waits carry: `provider/model` of its match (`*` for a field it leaves open). */
export function rateLimitName(limit: RateLimit): string {
  return `${limit.match.provider ?? '*'}/${limit.match.model ?? '*'}`
}

interface Charge {
  readonly at: number
  tokens: number
}


interface Bucket {
  readonly limit: RateLimit
  readonly name: string
  /** Start times of the requests of the last minute, oldest first. */
  readonly starts: number[]
  /** Token charges of the last minute, oldest first. */
  readonly charges: Charge[]
  closedUntil: number
  readonly waiting: Set<{ readonly since: number }>
}

/** What a limit has seen in the last minute: its starts and token charges (oldest first), and when a `Retry-After` ends. */
export interface RateWindow {
  readonly starts: number[]
  readonly charges: { readonly at: number; tokens: number }[]
  readonly closedUntil: number
}

/**
 * How long a request of `tokens` must wait for `limit`, given what the limit
 * saw (`window`, pruned to the last 60 s in place), and which part holds it:
 * the rule every {@link RateLimiter} keeps, in process or in a database.
 */
export function rateLimitDelay(limit: RateLimit, window: RateWindow, now: number, tokens: number): { readonly ms: number; readonly kind: 'rpm' | 'tpm' | 'retry-after' } {
  return delayOf({ limit, starts: window.starts, charges: window.charges, closedUntil: window.closedUntil }, now, tokens)
}

/** What keeps a request from a bucket now: how long, and which part of the limit. */
function delayOf(bucket: Pick<Bucket, 'limit' | 'starts' | 'charges' | 'closedUntil'>, now: number, tokens: number): { readonly ms: number; readonly kind: 'rpm' | 'tpm' | 'retry-after' } {
  const horizon = now - WINDOW_MS
  while (bucket.starts.length > 0 && (bucket.starts[0] as number) <= horizon) bucket.starts.shift()
  while (bucket.charges.length > 0 && (bucket.charges[0] as Charge).at <= horizon) bucket.charges.shift()
  let found: { ms: number; kind: 'rpm' | 'tpm' | 'retry-after' } = { ms: 0, kind: 'rpm' }
  if (bucket.closedUntil > now) found = { ms: bucket.closedUntil - now, kind: 'retry-after' }
  const rpm = bucket.limit.requestsPerMinute
  if (rpm !== undefined && bucket.starts.length >= rpm) {
    // Room once enough of the window's starts are a full minute old: the (n - rpm)th oldest.
    const ms = (bucket.starts[bucket.starts.length - rpm] as number) + WINDOW_MS - now
    if (ms > found.ms) found = { ms, kind: 'rpm' }
  }
  const tpm = bucket.limit.tokensPerMinute
  if (tpm !== undefined && bucket.charges.length > 0) {
    let used = 0
    for (const charge of bucket.charges) used += charge.tokens
    // A request larger than the whole limit goes once the window is empty, rather than never.
    const need = Math.min(tokens, tpm)
    if (used + need > tpm) {
      let left = used
      let ms = 0
      for (const charge of bucket.charges) {
        left -= charge.tokens
        ms = charge.at + WINDOW_MS - now
        if (left + need <= tpm) break
      }
      if (ms > found.ms) found = { ms, kind: 'tpm' }
    }
  }
  return found
}

/**
 * An in-process {@link RateLimiter} over the injected clock: a sliding minute
 * per limit (a request starts only when fewer than `requestsPerMinute` started
 * in the 60 s before it, and its worst case fits `tokensPerMinute` beside the
 * charges of those 60 s; a settled request counts from its answer instead of
 * its start). A request matching several limits waits for all of
 * them. Checking and charging happen in one synchronous step, so concurrent
 * calls never overshoot.
 *
 * @throws RuntimeInputError `RUN_OPTIONS_INVALID` for a bad limit (see {@link checkRateLimits})
 */
export function createRateLimiter(options: { readonly limits: readonly RateLimit[]; readonly clock?: RetryClock | undefined }): RateLimiter {
  const limits = checkRateLimits(options.limits)
  const clock = options.clock ?? systemClock
  const buckets: Bucket[] = limits.map((limit) => ({ limit, name: rateLimitName(limit), starts: [], charges: [], closedUntil: -Infinity, waiting: new Set() }))
  const matching = (request: { readonly provider: string; readonly model: string }): Bucket[] =>
    buckets.filter(({ limit }) => (limit.match.provider === undefined || limit.match.provider === request.provider) && (limit.match.model === undefined || limit.match.model === request.model))
  /** Sleeping waiters, woken early when a `Retry-After` changes what they wait for. */
  const sleepers = new Set<AbortController>()

  return {
    limits,
    async acquire(request) {
      const mine = matching(request)
      const tokens = Math.max(0, request.tokens ?? 0)
      const since = clock.now()
      const marker = { since }
      let blamed: string | undefined
      try {
        for (;;) {
          request.signal?.throwIfAborted()
          const now = clock.now()
          let longest: { ms: number; name: string } = { ms: 0, name: '' }
          for (const bucket of mine) {
            const delay = delayOf(bucket, now, tokens)
            if (delay.ms > longest.ms) longest = { ms: delay.ms, name: `${bucket.name} ${delay.kind}` }
          }
          if (longest.ms <= 0) {
            const charges = mine.map((bucket) => {
              bucket.starts.push(now)
              if (bucket.limit.tokensPerMinute === undefined) return undefined
              const charge: Charge = { at: now, tokens }
              bucket.charges.push(charge)
              return charge
            })
            return {
              wait: blamed === undefined ? undefined : { limit: blamed, waitedMs: Math.max(0, Math.round(now - since)) },
              settle: (used) => {
                const answered = clock.now()
                for (const [index, bucket] of mine.entries()) {
                  // The request stays in the window until a minute after it was answered: what the provider counts
                  // is when it arrived, which is after it was let go, so the start moves to the answer (starts stay in order).
                  const at = bucket.starts.indexOf(now)
                  if (at >= 0 && answered > now) {
                    bucket.starts.splice(at, 1)
                    bucket.starts.push(answered)
                  }
                  const charge = charges[index]
                  if (charge === undefined) continue
                  charge.tokens = Math.max(0, used)
                  const kept = bucket.charges.indexOf(charge)
                  if (kept >= 0 && answered > now) {
                    bucket.charges.splice(kept, 1)
                    bucket.charges.push({ at: answered, tokens: charge.tokens })
                  }
                }
              },
            }
          }
          blamed = longest.name
          for (const bucket of mine) bucket.waiting.add(marker)
          await sleepWakeable(clock, longest.ms, request.signal, sleepers)
        }
      } finally {
        for (const bucket of mine) bucket.waiting.delete(marker)
      }
    },
    retryAfter(request, ms) {
      if (!(ms > 0)) return Promise.resolve()
      const until = clock.now() + ms
      for (const bucket of matching(request)) bucket.closedUntil = Math.max(bucket.closedUntil, until)
      // Waiters recompute: one sleeping for less than the new closing sleeps again.
      for (const sleeper of [...sleepers]) sleeper.abort()
      return Promise.resolve()
    },
    snapshot() {
      const now = clock.now()
      return buckets.map((bucket) => {
        delayOf(bucket, now, 0)
        let oldest: number | undefined
        for (const waiter of bucket.waiting) oldest = oldest === undefined ? waiter.since : Math.min(oldest, waiter.since)
        return {
          limit: bucket.name,
          started: bucket.starts.length,
          waiting: bucket.waiting.size,
          oldestWaitMs: oldest === undefined ? 0 : Math.max(0, Math.round(now - oldest)),
          closedForMs: Math.max(0, bucket.closedUntil - now),
        }
      })
    },
  }
}

/**
 * A limiter's limits as rows of `runtime.queues()`: key `rate:<provider>/<model>`,
 * `running` the requests started in the last minute, `waiting` the calls
 * waiting for room, and the oldest wait.
 */
export function rateQueues(limiter: RateLimiter | undefined): QueueSnapshot[] {
  return (limiter?.snapshot() ?? []).map((limit) => ({ key: `rate:${limit.limit}`, running: limit.started, waiting: limit.waiting, oldestWaitMs: limit.oldestWaitMs }))
}

const hostLimiters = new WeakMap<object, RateLimiter>()

/**
 * The limiter of a host that declares `rateLimits`: one per host object,
 * shared by every run that uses it, reading the clock of the first run that
 * asks. Undefined for a host without limits.
 *
 * @throws RuntimeInputError `RUN_OPTIONS_INVALID` when the host's limits are bad
 */
export function hostRateLimiter(host: { readonly rateLimits?: readonly RateLimit[] } | undefined, clock?: RetryClock): RateLimiter | undefined {
  if (host?.rateLimits === undefined) return undefined
  let limiter = hostLimiters.get(host)
  if (limiter === undefined) {
    limiter = createRateLimiter({ limits: host.rateLimits, clock })
    hostLimiters.set(host, limiter)
  }
  return limiter
}

/**
 * Sleeps `ms` on the clock until the request's signal aborts or the limiter
 * wakes every sleeper (a limit reopened): the wait both limiters make.
 */
export async function sleepWakeable(clock: { sleep(ms: number, signal?: AbortSignal): Promise<void> }, ms: number, signal: AbortSignal | undefined, sleepers: Set<AbortController>): Promise<void> {
  const wake = new AbortController()
  const onAbort = (): void => {
    wake.abort()
  }
  signal?.addEventListener('abort', onAbort, { once: true })
  sleepers.add(wake)
  try {
    await clock.sleep(ms, wake.signal)
  } finally {
    sleepers.delete(wake)
    signal?.removeEventListener('abort', onAbort)
  }
}
