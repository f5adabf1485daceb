/**
 * The floor of a journal: `fs.writeSync` of one JSON line per event and an
 * fsync every `batchLines` lines, with the same fields the Locus journal
 * writes for a tool attempt. No validation, no schema, no directory layout.
 */
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs'

/** Locus fsyncs a batch journal every 1000 lines; the floor does the same. */
export const RAW_BATCH_LINES = 1000

/** An append-only JSONL file with batched fsync, written by hand. */
export class RawJournal {
  readonly #fd: number
  readonly #batchLines: number
  readonly #runId: string
  #seq = 0
  #unsynced = 0

  constructor(path: string, runId: string, batchLines = RAW_BATCH_LINES) {
    this.#fd = openSync(path, 'a')
    this.#batchLines = batchLines
    this.#runId = runId
  }

  /** Appends one line stamped with the common fields, and fsyncs when a batch is full. */
  append(type: string, fields: Readonly<Record<string, unknown>>): void {
    this.#seq += 1
    const line = { v: 1, seq: this.#seq, ts: new Date().toISOString(), type, runId: this.#runId, executionId: this.#runId, ...fields }
    writeSync(this.#fd, JSON.stringify(line) + '\n')
    this.#unsynced += 1
    if (this.#unsynced >= this.#batchLines) {
      fsyncSync(this.#fd)
      this.#unsynced = 0
    }
  }

  /** Fsyncs what is left and closes the file. */
  close(): void {
    if (this.#unsynced > 0) fsyncSync(this.#fd)
    closeSync(this.#fd)
  }
}

/** Journals one attempt of a tool call the way the Locus journal does: a start line, then an end line. */
export async function journaledAttempt<T>(
  journal: RawJournal,
  where: { readonly toolCallId: string; readonly tool: string; readonly maxAttempts: number },
  attempt: number,
  operation: () => Promise<T>,
): Promise<T> {
  journal.append('tool_start', { ...where, attempt })
  const startedAt = Date.now()
  try {
    const value = await operation()
    journal.append('tool_end', { ...where, attempt, status: 'completed', durationMs: Date.now() - startedAt })
    return value
  } catch (error) {
    const failure = { error: error instanceof Error ? error.message : String(error), retryable: (error as { retryable?: unknown }).retryable === true }
    journal.append('tool_end', { ...where, attempt, status: 'failed', failure, durationMs: Date.now() - startedAt })
    throw error
  }
}
