import type { Dirent } from 'node:fs'
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { type ListRunRowsFilter, type RunRow, type RunRowPage, checkRowFilter, pageOfRows } from './run-rows.js'

/** What the index reads rows through: the file store's own row reader. */
export interface RowIndexSource {
  /** The runs directory. */
  readonly base: string
  /** The name of a run's row file in its directory. */
  readonly rowFile: string
  /** The row a writer of this process holds (the freshest there is), if any. */
  live(runId: string): RunRow | undefined
  /** The run's row from its file, rebuilt from the journals when missing or damaged; undefined for a directory that is no run. */
  read(runId: string): Promise<RunRow | undefined>
}

/** Which write of a row file a cached row came from: a row file is replaced whole (a rename), so its inode changes with each write. */
interface Version {
  readonly ino: number
  readonly mtimeMs: number
  readonly size: number
}

interface Cached {
  readonly row: RunRow
  readonly version: Version | undefined
}

const sameVersion = (a: Version | undefined, b: Version | undefined): boolean =>
  a !== undefined && b !== undefined && a.ino === b.ino && a.mtimeMs === b.mtimeMs && a.size === b.size

/** The coarsest mtime a file system keeps (a second); on such a one, a directory changed more recently than this is read again. */
const MTIME_GRAIN_MS = 1_000

/** Reads at most this many row files at once. */
const CONCURRENCY = 64

async function eachLimited<T>(items: readonly T[], task: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next] as T
        next += 1
        await task(item)
      }
    }),
  )
}

/**
 * The file store's listing of summary rows, kept in memory between listings.
 *
 * A listing reads the directory once, reads the row files of runs it has not
 * seen, and re-reads only rows that can have changed in a way that matters to
 * it: the directory is read again only when its mtime moved (a run was
 * created or removed), a run's workflow and creation time never change once set, so a listing
 * by workflow, time or cursor re-checks only the rows of the page it returns
 * (and rows whose workflow was not written yet). A listing by status re-checks
 * every candidate, since status moves. A re-check is one `stat` of the row
 * file; the row is read again only when the file was replaced since. Rows a
 * writer of this process holds are always the live ones. Rows written by
 * other processes are therefore never served stale in a page.
 */
export function createFileRowIndex(source: RowIndexSource): { list(filter?: ListRunRowsFilter): Promise<RunRowPage> } {
  const cache = new Map<string, Cached>()

  async function versionOf(runId: string): Promise<Version | undefined> {
    const stats = await stat(join(source.base, runId, source.rowFile)).catch(() => undefined)
    return stats === undefined ? undefined : { ino: stats.ino, mtimeMs: stats.mtimeMs, size: stats.size }
  }

  /** Brings one run's cached row up to date: reads the row file again only when it was replaced. */
  async function refresh(runId: string): Promise<void> {
    if (source.live(runId) !== undefined) return
    const cached = cache.get(runId)
    // The version is taken before the read: a write after it shows as a new version next time.
    const version = await versionOf(runId)
    if (cached !== undefined && sameVersion(cached.version, version)) return
    const row = await source.read(runId).catch(() => undefined)
    if (row === undefined) cache.delete(runId)
    else cache.set(runId, { row, version })
  }

  // The directory's names, read again only when the directory changed (a run created or removed changes its mtime).
  let listed: { readonly version: Version; readonly readAt: number; readonly names: readonly string[] } | undefined

  async function runNames(): Promise<readonly string[] | undefined> {
    const stats = await stat(source.base).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    })
    if (stats === undefined) {
      listed = undefined
      cache.clear()
      return undefined
    }
    const version: Version = { ino: stats.ino, mtimeMs: stats.mtimeMs, size: stats.size }
    // On a file system that keeps mtimes to the second (an mtime on a whole second), a run created in the same
    // second as the read would not move it: the names are trusted only once the directory changed well before.
    const coarse = version.mtimeMs % MTIME_GRAIN_MS === 0
    if (listed !== undefined && sameVersion(listed.version, version) && (!coarse || listed.readAt - version.mtimeMs >= MTIME_GRAIN_MS)) return listed.names
    const readAt = Date.now()
    let entries: Dirent[]
    try {
      entries = await readdir(source.base, { withFileTypes: true })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    }
    // Dot names (the schedules directory, temporary files) are never runs.
    const names = entries.filter((entry) => entry.isDirectory() && !entry.name.startsWith('.')).map((entry) => entry.name)
    const present = new Set(names)
    for (const runId of cache.keys()) if (!present.has(runId)) cache.delete(runId)
    listed = { version, readAt, names }
    return names
  }

  const rowOf = (runId: string): RunRow | undefined => source.live(runId) ?? cache.get(runId)?.row

  return {
    async list(filter = {}) {
      checkRowFilter(filter)
      const names = await runNames()
      if (names === undefined) return { rows: [], nextCursor: undefined }
      // Runs not seen before, and runs whose workflow was not written yet (it is what a workflow filter reads).
      await eachLimited(
        names.filter((runId) => {
          const row = rowOf(runId)
          return row === undefined || row.workflow === undefined
        }),
        refresh,
      )
      if (filter.status !== undefined) {
        // Status moves: every run the other filters keep is checked before it is filtered by status.
        const candidates = names.filter((runId) => {
          const row = rowOf(runId)
          return row !== undefined && (filter.workflow === undefined || row.workflow === filter.workflow) && (filter.since === undefined || row.createdAt >= filter.since)
        })
        await eachLimited(candidates, refresh)
      }
      const rowsNow = (): RunRow[] => names.flatMap((runId) => rowOf(runId) ?? [])
      const page = pageOfRows(rowsNow(), filter)
      // The page's own rows are checked last, so each is as fresh as one stat can tell.
      await eachLimited(
        page.rows.map((row) => row.runId),
        refresh,
      )
      return filter.status === undefined ? { rows: page.rows.map((row) => rowOf(row.runId) ?? row), nextCursor: page.nextCursor } : pageOfRows(rowsNow(), filter)
    },
  }
}
