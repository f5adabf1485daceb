import type { JournalLine } from '@locus/journal'
import type { ExecutionKind } from './run-store.js'
import { type RunRow, foldRunRow } from './run-rows.js'

interface Entry {
  row: RunRow
  /** Goes up by one with each change, so a persisted row never replaces a newer one. */
  version: number
  writers: number
  /** The change not yet persisted. */
  dirty: boolean
  writing: Promise<void> | undefined
}

/**
 * The summary rows of the runs this process writes, shared by every writer of
 * one run (a root or resume and the children it spawns), kept up to date line
 * by line and persisted by the adapter one write at a time per run: a burst of
 * changes costs one write of the newest row, and a row is never replaced by an
 * older one. A failed write leaves the row dirty for the next change or flush;
 * the journal stays the truth and a resume rebuilds the row from it.
 */
export class LiveRows {
  readonly #entries = new Map<string, Entry>()
  readonly #persist: (row: RunRow, version: number) => Promise<void>

  constructor(persist: (row: RunRow, version: number) => Promise<void>) {
    this.#persist = persist
  }

  /** The live row of a run this process writes, if any. */
  get(runId: string): RunRow | undefined {
    return this.#entries.get(runId)?.row
  }

  /** True when a writer of the run is open in this process. */
  holds(runId: string): boolean {
    return this.#entries.has(runId)
  }

  /**
   * Opens a writer's share of a run's row: the live one when another writer of
   * the run is open here, else `initial` (a new row, or one rebuilt from the
   * journal), which is persisted at once so a listing sees the run.
   */
  open(runId: string, initial: RunRow, version = 0): void {
    const entry = this.#entries.get(runId)
    if (entry !== undefined) {
      entry.writers += 1
      return
    }
    this.#entries.set(runId, { row: initial, version: version + 1, writers: 1, dirty: true, writing: undefined })
    this.#kick(runId)
  }

  /** Folds one appended line into the run's row; persists it when it changed. */
  fold(runId: string, line: JournalLine, kind: ExecutionKind): void {
    const entry = this.#entries.get(runId)
    if (entry === undefined) return
    const next = foldRunRow(entry.row, line, kind)
    if (next === entry.row) return
    entry.row = next
    entry.version += 1
    entry.dirty = true
    this.#kick(runId)
  }

  /** Resolves once the run's newest row is persisted (or its write failed: the next change tries again). */
  async settled(runId: string): Promise<void> {
    const entry = this.#entries.get(runId)
    if (entry === undefined) return
    if (entry.dirty && entry.writing === undefined) this.#kick(runId)
    while (entry.writing !== undefined) await entry.writing
  }

  /** Closes one writer's share; the entry is dropped once the last writer of the run closed and its row is persisted. */
  async close(runId: string): Promise<void> {
    const entry = this.#entries.get(runId)
    if (entry === undefined) return
    await this.settled(runId)
    entry.writers -= 1
    if (entry.writers <= 0 && this.#entries.get(runId) === entry) this.#entries.delete(runId)
  }

  #kick(runId: string): void {
    const entry = this.#entries.get(runId)
    if (entry === undefined || entry.writing !== undefined || !entry.dirty) return
    entry.dirty = false
    const { row, version } = entry
    entry.writing = this.#persist(row, version)
      .catch(() => {
        entry.dirty = true
      })
      .finally(() => {
        entry.writing = undefined
        // Changes made while this write was in flight go out now, as one write of the newest row.
        if (entry.dirty && entry.row !== row) this.#kick(runId)
      })
  }
}
