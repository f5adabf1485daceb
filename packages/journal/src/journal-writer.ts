import { closeSync, fdatasyncSync, fsyncSync, mkdirSync, openSync, readSync, statSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'
import { z } from 'zod'
import {
  JournalClosedError,
  JournalWriteError,
  JournalWriterOptionsError,
} from './journal-file-errors.js'
import type { JournalLine, JournalLineInput } from './journal-line-schema.js'
import { createLineStamper, type LineStamper } from './line-stamper.js'
import { readJournal } from './read-journal.js'

/** How hard the writer works to get each line onto the disk. */
export const JOURNAL_DURABILITIES = ['none', 'batch', 'line'] as const
export type JournalDurability = (typeof JOURNAL_DURABILITIES)[number]

/** Default `batchLines`: fsync after this many lines at most. */
export const DEFAULT_BATCH_LINES = 1000
/** Default `batchMs`: fsync lines at most this long after they were written. */
export const DEFAULT_BATCH_MS = 200
/** With durability `none`, buffered lines go to the operating system once the buffer holds this many bytes. */
const NONE_BUFFER_BYTES = 64 * 1024

export interface JournalWriterOptions {
  /** Written as `runId` on every line. */
  readonly runId: string
  /** Written as `executionId` on every line. */
  readonly executionId: string
  /**
   * - `line`: each line is written and fsynced before `append` returns; it survives a power loss.
   * - `batch`: each line is written before `append` returns, so it survives a crash of the process;
   *   fsync runs every `batchLines` lines or `batchMs` milliseconds, whichever comes first.
   * - `none`: lines are buffered in memory and written in large chunks, on `flush()` and on `close()`;
   *   never fsynced. Fastest; a crash of the process loses what is still buffered.
   * @default 'batch'
   */
  readonly durability?: JournalDurability | undefined
  /** @default 1000 */
  readonly batchLines?: number | undefined
  /** @default 200 */
  readonly batchMs?: number | undefined
  /** Clock for `ts` and for batch timing. @default () => new Date() */
  readonly now?: (() => Date) | undefined
  /**
   * Called with each line once it is in the journal (for live streaming).
   * An error it throws reaches the caller of `append`; the line stays written.
   */
  readonly onLine?: ((line: JournalLine) => void) | undefined
  /**
   * `seq` of the first line appended. By default 1 for a new file, and one
   * past the highest `seq` already in the file when it exists.
   */
  readonly startSeq?: number | undefined
}

/** An append-only journal file. One writer per file. */
export interface JournalWriter {
  /**
   * Validates the line, stamps it with `v`, the next `seq`, `ts`, `runId` and
   * `executionId`, appends it and returns the full line.
   * @throws {JournalLineError} when the line breaks the schema; nothing is written.
   * @throws {JournalClosedError} after `close()`.
   * @throws {JournalWriteError} when the file cannot be written.
   */
  append(line: JournalLineInput): JournalLine
  /** Writes buffered lines and, unless durability is `none`, fsyncs them. */
  flush(): void
  /** Flushes and closes the file. Calling it again does nothing. */
  close(): void
  readonly path: string
  /** `seq` of the last line appended, or `startSeq - 1` before the first. */
  readonly lastSeq: number
  readonly durability: JournalDurability
  /** How many times the writer has fsynced the file. */
  readonly syncCount: number
  readonly closed: boolean
}

const OptionsSchema = z.object({
  runId: z.string().min(1),
  executionId: z.string().min(1),
  durability: z.enum(JOURNAL_DURABILITIES).optional(),
  batchLines: z.int().min(1).optional(),
  batchMs: z.number().positive().optional(),
  now: z.function().optional(),
  onLine: z.function().optional(),
  startSeq: z.int().min(0).optional(),
})

/**
 * Opens (creating it and its directory if needed) an append-only JSONL
 * journal. Nothing already in the file is ever rewritten. When the file ends
 * in a partial line left by a crash, the writer first ends that line, so it
 * stays a separate (invalid, reported) line and the new lines stay whole.
 *
 * @example
 * ```ts
 * const journal = createJournalWriter(paths.journalPath, { runId: 'run-1', executionId: 'run-1' })
 * journal.append({ type: 'log', level: 'info', message: 'hello' })
 * journal.close()
 * ```
 */
export function createJournalWriter(path: string, options: JournalWriterOptions): JournalWriter {
  const parsedOptions = OptionsSchema.safeParse(options)
  if (!parsedOptions.success) {
    throw new JournalWriterOptionsError(
      parsedOptions.error.issues.map((issue) => `${issue.path.map(String).join('.') || 'options'}: ${issue.message}`),
      parsedOptions.error,
    )
  }
  if (typeof path !== 'string' || path.length === 0) {
    throw new JournalWriterOptionsError(['path: expected the journal file path as a non-empty string'])
  }
  return new FileJournalWriter(path, options)
}

class FileJournalWriter implements JournalWriter {
  readonly path: string
  readonly durability: JournalDurability
  private readonly batchLines: number
  private readonly batchMs: number
  private readonly now: () => Date
  private readonly onLine: ((line: JournalLine) => void) | undefined
  private fd: number | undefined
  private readonly stamper: LineStamper
  private syncs = 0
  private buffered: string[] = []
  private bufferedBytes = 0
  private unsyncedLines = 0
  private firstUnsyncedAt = 0
  private timer: NodeJS.Timeout | undefined
  private failure: JournalWriteError | undefined

  constructor(path: string, options: JournalWriterOptions) {
    this.path = path
    this.durability = options.durability ?? 'batch'
    this.batchLines = options.batchLines ?? DEFAULT_BATCH_LINES
    this.batchMs = options.batchMs ?? DEFAULT_BATCH_MS
    this.now = options.now ?? (() => new Date())
    this.onLine = options.onLine
    const existingSize = sizeOf(path)
    this.stamper = createLineStamper({
      runId: options.runId,
      executionId: options.executionId,
      now: this.now,
      startSeq: options.startSeq ?? (existingSize > 0 ? highestSeq(path) + 1 : 1),
    })
    try {
      mkdirSync(dirname(path), { recursive: true })
      // 'a+' so the last byte can be read back; every write still goes to the end.
      this.fd = openSync(path, 'a+')
    } catch (error) {
      throw new JournalWriteError(path, 'open', error)
    }
    if (existingSize > 0 && !endsWithNewline(this.fd, path)) this.writeNow('\n')
    if (existingSize === 0 && this.durability !== 'none') syncDirectory(dirname(path))
  }

  get lastSeq(): number {
    return this.stamper.lastSeq
  }

  get syncCount(): number {
    return this.syncs
  }

  get closed(): boolean {
    return this.fd === undefined
  }

  append(input: JournalLineInput): JournalLine {
    if (this.fd === undefined) throw new JournalClosedError(this.path, lineTypeOf(input))
    if (this.failure !== undefined) throw this.failure
    const line = this.stamper.stamp(input)
    const atMs = this.stamper.lastStampMs
    const text = JSON.stringify(line) + '\n'
    if (this.durability === 'none') {
      this.buffered.push(text)
      this.bufferedBytes += text.length
      if (this.bufferedBytes >= NONE_BUFFER_BYTES) this.writeBuffered()
      else this.armTimer()
    } else {
      this.writeNow(text)
      if (this.durability === 'line') {
        this.sync()
      } else {
        if (this.unsyncedLines === 0) this.firstUnsyncedAt = atMs
        this.unsyncedLines += 1
        if (this.unsyncedLines >= this.batchLines || atMs - this.firstUnsyncedAt >= this.batchMs) this.sync()
        else this.armTimer()
      }
    }
    this.onLine?.(line)
    return line
  }

  flush(): void {
    if (this.fd === undefined) return
    if (this.failure !== undefined) throw this.failure
    this.writeBuffered()
    if (this.durability !== 'none' && this.unsyncedLines > 0) this.sync()
  }

  close(): void {
    const fd = this.fd
    if (fd === undefined) return
    this.disarmTimer()
    let failure: Error | undefined
    try {
      if (this.failure === undefined) this.flush()
    } catch (error) {
      failure = error as Error
    }
    this.fd = undefined
    try {
      closeSync(fd)
    } catch (error) {
      failure ??= new JournalWriteError(this.path, 'close', error)
    }
    if (failure !== undefined) throw failure
  }

  private writeBuffered(): void {
    if (this.buffered.length === 0) return
    const text = this.buffered.join('')
    this.buffered = []
    this.bufferedBytes = 0
    this.writeNow(text)
  }

  private writeNow(text: string): void {
    const fd = this.fd
    if (fd === undefined) return
    try {
      const written = writeSync(fd, text)
      const expected = Buffer.byteLength(text)
      // A regular file rarely takes a short write, but when it does the rest must follow, in order.
      if (written < expected) {
        const bytes = Buffer.from(text)
        let offset = written
        while (offset < bytes.length) offset += writeSync(fd, bytes, offset)
      }
    } catch (error) {
      this.failure = new JournalWriteError(this.path, 'write', error)
      throw this.failure
    }
  }

  private sync(): void {
    const fd = this.fd
    if (fd === undefined) return
    this.disarmTimer()
    try {
      fdatasyncSync(fd)
    } catch (error) {
      this.failure = new JournalWriteError(this.path, 'fsync', error)
      throw this.failure
    }
    this.syncs += 1
    this.unsyncedLines = 0
  }

  /** Idle lines still reach the disk (or the OS, for `none`) within `batchMs`. */
  private armTimer(): void {
    if (this.timer !== undefined) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      try {
        this.flush()
      } catch {
        // Recorded in this.failure; the next append or flush reports it.
      }
    }, this.batchMs)
    this.timer.unref()
  }

  private disarmTimer(): void {
    if (this.timer === undefined) return
    clearTimeout(this.timer)
    this.timer = undefined
  }
}

function lineTypeOf(input: unknown): string | undefined {
  const type = typeof input === 'object' && input !== null ? (input as { type?: unknown }).type : undefined
  return typeof type === 'string' ? type : undefined
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size
  } catch {
    return 0
  }
}

function highestSeq(path: string): number {
  const { lines, tornTail } = readJournal(path)
  let highest = 0
  for (const line of lines) highest = Math.max(highest, line.seq)
  // A complete JSON line that only lacks its newline will become a whole line once the writer ends it.
  if (tornTail !== null) {
    try {
      const seq = (JSON.parse(tornTail.text) as { seq?: unknown }).seq
      if (typeof seq === 'number' && Number.isSafeInteger(seq)) highest = Math.max(highest, seq)
    } catch {
      // A partial line has no usable seq.
    }
  }
  return highest
}

function endsWithNewline(fd: number, path: string): boolean {
  const size = sizeOf(path)
  if (size === 0) return true
  const last = Buffer.alloc(1)
  readSync(fd, last, 0, 1, size - 1)
  return last[0] === 0x0a
}

/** Makes a newly created file's directory entry durable too. Best effort: not every platform can open a directory. */
function syncDirectory(directory: string): void {
  let fd: number | undefined
  try {
    fd = openSync(directory, 'r')
    fsyncSync(fd)
  } catch {
    // Windows cannot fsync a directory; the file's own fsyncs still apply.
  } finally {
    if (fd !== undefined) closeQuietly(fd)
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd)
  } catch {
    // Nothing was written through this descriptor.
  }
}
