import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { IdempotencyTable, validateIdempotencyKey, validateIdempotencyRecord } from './idempotency-keys.js'
import type { IdempotencyRecord } from './run-store.js'

/** The file in the runs directory that keeps idempotency keys for their window (a file, so run listings pass it by). */
export const IDEMPOTENCY_INDEX = 'idempotency-keys.json'

/** Held while one process rewrites the index; created exclusively beside it. */
const LOCK_SUFFIX = '.lock'
/** A lock older than this was left by a process that died mid-write, and is taken over. */
const STALE_LOCK_MS = 10_000
/** How long a writer waits for the lock before giving up. */
const LOCK_WAIT_MS = 15_000

interface IndexFile {
  readonly version: 1
  readonly keys: Record<string, IdempotencyRecord>
}

const isRecord = (value: unknown): value is IdempotencyRecord =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as IdempotencyRecord).fingerprint === 'string' &&
  typeof (value as IdempotencyRecord).runId === 'string' &&
  Number.isFinite((value as IdempotencyRecord).expiresAt)

const codeOf = (error: unknown): unknown => (typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined)

const pause = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms)
  })

/**
 * The file store's idempotency keys: one small JSON index in the runs
 * directory, rewritten whole (under a private name, synced, then renamed into
 * place, so a reader never sees half of it) while holding a lock file, so
 * two processes on one directory never lose each other's keys. Expired keys
 * are dropped at each write, so the index holds one window's keys. An index
 * that does not parse is moved aside (`.damaged-<time>`), never overwritten.
 */
export function fileIdempotencyIndex(base: string): {
  put(key: string, record: IdempotencyRecord, now: number): Promise<{ stored: boolean; record: IdempotencyRecord }>
  read(key: string, now: number): Promise<IdempotencyRecord | undefined>
  release(key: string, runId: string): Promise<boolean>
} {
  const path = join(base, IDEMPOTENCY_INDEX)
  const lockPath = `${path}${LOCK_SUFFIX}`
  // Writers of this process take turns before the lock file, so they do not spin against each other.
  let turn: Promise<unknown> = Promise.resolve()

  /** The index as stored; `damaged` when the file is there but is not an index. */
  async function load(): Promise<{ table: IdempotencyTable; damaged: boolean }> {
    let text: string
    try {
      text = await readFile(path, 'utf8')
    } catch (error) {
      if (codeOf(error) === 'ENOENT') return { table: new IdempotencyTable(), damaged: false }
      throw error
    }
    try {
      const parsed = JSON.parse(text) as unknown
      const keys = typeof parsed === 'object' && parsed !== null ? (parsed as { keys?: unknown }).keys : undefined
      if (typeof keys !== 'object' || keys === null) throw new Error('no keys')
      return { table: new IdempotencyTable(Object.entries(keys).filter((entry): entry is [string, IdempotencyRecord] => isRecord(entry[1]))), damaged: false }
    } catch {
      return { table: new IdempotencyTable(), damaged: true }
    }
  }

  async function save(table: IdempotencyTable): Promise<void> {
    const body: IndexFile = { version: 1, keys: Object.fromEntries(table.records) }
    const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`
    const handle = await open(temporary, 'w')
    try {
      await handle.writeFile(JSON.stringify(body))
      await handle.sync()
    } finally {
      await handle.close()
    }
    try {
      await rename(temporary, path)
    } catch (error) {
      await unlink(temporary).catch(() => undefined)
      throw error
    }
  }

  async function acquire(): Promise<void> {
    const started = Date.now()
    for (;;) {
      try {
        const handle = await open(lockPath, 'wx')
        await handle.writeFile(String(process.pid)).finally(() => handle.close())
        return
      } catch (error) {
        if (codeOf(error) === 'ENOENT') {
          await mkdir(base, { recursive: true })
          continue
        }
        if (codeOf(error) !== 'EEXIST') throw error
      }
      const held = await stat(lockPath).catch(() => undefined)
      if (held !== undefined && Date.now() - held.mtimeMs > STALE_LOCK_MS) {
        await unlink(lockPath).catch(() => undefined)
        continue
      }
      if (Date.now() - started > LOCK_WAIT_MS) {
        throw new Error(`Could not take ${lockPath} within ${LOCK_WAIT_MS / 1000} s: another process holds it. If none does, remove the file.`)
      }
      await pause(5)
    }
  }

  /** Reads, changes and (when `change` says so) rewrites the index, one writer at a time across processes. */
  function update<T>(change: (table: IdempotencyTable) => { result: T; write: boolean }): Promise<T> {
    const next = turn.then(async () => {
      await acquire()
      try {
        const { table, damaged } = await load()
        const { result, write } = change(table)
        if (write) {
          if (damaged) await rename(path, `${path}.damaged-${Date.now()}`)
          await save(table)
        }
        return result
      } finally {
        await unlink(lockPath).catch(() => undefined)
      }
    })
    turn = next.catch(() => undefined)
    return next
  }

  return {
    async put(key, record, now) {
      const checked = validateIdempotencyRecord(key, record)
      return update((table) => {
        const result = table.put(key, checked, now)
        if (result.stored) table.sweep(now)
        return { result, write: result.stored }
      })
    },
    async read(key, now) {
      validateIdempotencyKey(key)
      return (await load()).table.read(key, now)
    },
    async release(key, runId) {
      validateIdempotencyKey(key)
      return update((table) => {
        const released = table.release(key, runId)
        return { result: released, write: released }
      })
    },
  }
}
