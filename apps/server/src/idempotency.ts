import { createRunId } from '@locus/runtime'
import type { IdempotencyRecord, RunStore } from '@locus/store'
import { ApiError } from './errors.js'

/** What a keyed request is answered with. */
export type Claim<T> =
  /** The first request with this key: it started the work. */
  | { readonly kind: 'first'; readonly outcome: Promise<T> }
  /** The same key and body again: the first request's outcome. */
  | { readonly kind: 'repeat'; readonly outcome: Promise<T> }

interface Entry<T> {
  readonly fingerprint: string
  readonly outcome: Promise<T>
  readonly expiresAt: number
}

/** `Idempotency-Key`: 1 to 255 visible ASCII characters. */
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/

/** Checks an `Idempotency-Key` header; `undefined` when absent. */
export function idempotencyKeyOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  if (!KEY_PATTERN.test(header)) {
    throw new ApiError('invalid_request', 'Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID is a good one).', {
      issues: ['Idempotency-Key: not 1 to 255 visible ASCII characters'],
    })
  }
  return header
}

/** JSON with object keys sorted at every level, so two bodies that mean the same compare equal. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(',')}]`
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>
    return `{${Object.keys(record)
      .filter((key) => record[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`)
      .join(',')}}`
  }
  // undefined, functions and symbols have no JSON; as a value in a body they mean null.
  return typeof value === 'undefined' || typeof value === 'function' || typeof value === 'symbol' ? 'null' : JSON.stringify(value)
}

/** What a keyed start answers with: the run, and whether an earlier request with the key started it. */
export interface KeyedStart {
  readonly runId: string
  readonly executionId: string
  /** True when the run was started by an earlier request with the key (in this process or one before a restart). */
  readonly repeat: boolean
}

/**
 * Idempotency keys kept in the runtime's store for `ttlMs` (file: an index
 * in the runs directory; PostgreSQL: a table), so a server restarted
 * mid-window, or another server on the same store, answers a repeated key
 * with the run the first request started. The key is also taken in memory
 * synchronously, before anything is awaited, so two concurrent requests in
 * one process start the work once and the second waits for the first. The
 * run id is chosen and kept before the run starts; a start that fails frees
 * the key, so the client may try again.
 */
export function createIdempotencyKeys(options: { readonly ttlMs: number; readonly store: RunStore; readonly now?: (() => number) | undefined }) {
  const entries = new Map<string, Entry<KeyedStart>>()
  const now = options.now ?? Date.now
  let nextSweep = 0

  function sweep(at: number): void {
    if (at < nextSweep) return
    nextSweep = at + Math.min(options.ttlMs, 60_000)
    for (const [key, entry] of entries) if (entry.expiresAt <= at) entries.delete(key)
  }

  const conflict = (): ApiError => new ApiError('idempotency_conflict', 'This Idempotency-Key was used with another request body; use a new key for a new request.')

  function answer(record: IdempotencyRecord, fingerprint: string): KeyedStart {
    if (record.fingerprint !== fingerprint) throw conflict()
    // The root execution of a run has the run's id.
    return { runId: record.runId, executionId: record.runId, repeat: true }
  }

  async function durable(key: string, fingerprint: string, at: number, start: (runId: string) => Promise<{ runId: string; executionId: string }>): Promise<KeyedStart> {
    const kept = await options.store.readIdempotencyKey(key, at)
    if (kept !== undefined) return answer(kept, fingerprint)
    const put = await options.store.putIdempotencyKey(key, { fingerprint, runId: createRunId(new Date(at)), expiresAt: at + options.ttlMs }, at)
    // Another process took the key meanwhile.
    if (!put.stored) return answer(put.record, fingerprint)
    try {
      return { ...(await start(put.record.runId)), repeat: false }
    } catch (error) {
      await options.store.releaseIdempotencyKey(key, put.record.runId).catch(() => undefined)
      throw error
    }
  }

  return {
    /**
     * Claims `key` for the request whose body is `fingerprint`, starting the
     * run with `start` (under the run id it is given) when the key is new.
     *
     * @throws ApiError `idempotency_conflict` when the key was used with another body
     */
    claim(key: string, fingerprint: string, start: (runId: string) => Promise<{ runId: string; executionId: string }>): Claim<KeyedStart> {
      const at = now()
      sweep(at)
      const existing = entries.get(key)
      if (existing !== undefined && existing.expiresAt > at) {
        if (existing.fingerprint !== fingerprint) throw conflict()
        return { kind: 'repeat', outcome: existing.outcome.then((started) => ({ ...started, repeat: true })) }
      }
      const outcome = durable(key, fingerprint, at, start)
      const entry: Entry<KeyedStart> = { fingerprint, outcome, expiresAt: at + options.ttlMs }
      entries.set(key, entry)
      outcome.catch(() => {
        if (entries.get(key) === entry) entries.delete(key)
      })
      return { kind: 'first', outcome }
    },
    get size(): number {
      return entries.size
    },
  }
}
