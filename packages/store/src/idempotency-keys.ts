import { validateRunId } from '@locus/journal'
import type { IdempotencyRecord } from './run-store.js'
import { StoreOptionsError } from './store-errors.js'

/** The longest idempotency key a store keeps (the server's are a principal and a header of up to 255 characters). */
const MAX_IDEMPOTENCY_KEY = 1024

/**
 * Checks an idempotency key and its record before a store keeps them.
 *
 * @throws StoreOptionsError naming what is wrong
 */
export function validateIdempotencyRecord(key: string, record: IdempotencyRecord | null | undefined): IdempotencyRecord {
  validateIdempotencyKey(key)
  if (record === null || record === undefined || typeof record.fingerprint !== 'string' || !Number.isFinite(record.expiresAt)) {
    throw new StoreOptionsError('An idempotency record is { fingerprint: string, runId: string, expiresAt: epoch milliseconds }.')
  }
  validateRunId(record.runId, 'runId')
  return { fingerprint: record.fingerprint, runId: record.runId, expiresAt: record.expiresAt }
}

/** @throws StoreOptionsError for a key that is not 1 to 1024 characters */
export function validateIdempotencyKey(key: string): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY) {
    throw new StoreOptionsError(`An idempotency key is a string of 1 to ${MAX_IDEMPOTENCY_KEY} characters, got ${typeof key === 'string' ? `${key.length} characters` : typeof key}.`)
  }
  return key
}

/**
 * Idempotency keys in a map: the memory store's, and the file store's index
 * once read. Expired records are dropped as they are met.
 */
export class IdempotencyTable {
  readonly records: Map<string, IdempotencyRecord>

  constructor(records: Iterable<[string, IdempotencyRecord]> = []) {
    this.records = new Map(records)
  }

  /** The first put of a live key wins; an expired one is replaced. */
  put(key: string, record: IdempotencyRecord, now: number): { stored: boolean; record: IdempotencyRecord } {
    const kept = this.read(key, now)
    if (kept !== undefined) return { stored: false, record: kept }
    this.records.set(key, record)
    return { stored: true, record }
  }

  read(key: string, now: number): IdempotencyRecord | undefined {
    const kept = this.records.get(key)
    if (kept === undefined) return undefined
    if (kept.expiresAt > now) return kept
    this.records.delete(key)
    return undefined
  }

  release(key: string, runId: string): boolean {
    if (this.records.get(key)?.runId !== runId) return false
    this.records.delete(key)
    return true
  }

  /** Drops every record expired at `now`. */
  sweep(now: number): void {
    for (const [key, record] of this.records) if (record.expiresAt <= now) this.records.delete(key)
  }
}
