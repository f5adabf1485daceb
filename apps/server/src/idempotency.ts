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

/**
 * Remembers idempotency keys in memory for `ttlMs`. The key is taken
 * synchronously, before the work is awaited, so two concurrent requests with
 * one key start the work once. A failed outcome frees the key, so the client
 * may try again. Keys do not survive a restart.
 */
export function createIdempotencyKeys<T>(options: { readonly ttlMs: number; readonly now?: () => number }) {
  const entries = new Map<string, Entry<T>>()
  const now = options.now ?? Date.now
  let nextSweep = 0

  function sweep(at: number): void {
    if (at < nextSweep) return
    nextSweep = at + Math.min(options.ttlMs, 60_000)
    for (const [key, entry] of entries) if (entry.expiresAt <= at) entries.delete(key)
  }

  return {
    /**
     * Claims `key` for the request whose body is `fingerprint`, starting the
     * work with `start` when the key is new.
     *
     * @throws ApiError `idempotency_conflict` when the key was used with another body
     */
    claim(key: string, fingerprint: string, start: () => Promise<T>): Claim<T> {
      const at = now()
      sweep(at)
      const existing = entries.get(key)
      if (existing !== undefined && existing.expiresAt > at) {
        if (existing.fingerprint !== fingerprint) {
          throw new ApiError('idempotency_conflict', 'This Idempotency-Key was used with another request body; use a new key for a new request.')
        }
        return { kind: 'repeat', outcome: existing.outcome }
      }
      let outcome: Promise<T>
      try {
        outcome = start()
      } catch (error) {
        outcome = Promise.reject(error instanceof Error ? error : new Error(String(error)))
      }
      const entry: Entry<T> = { fingerprint, outcome, expiresAt: at + options.ttlMs }
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
