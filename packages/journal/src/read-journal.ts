import { closeSync, openSync, readFileSync, readSync } from 'node:fs'
import { type FileHandle, open, readFile } from 'node:fs/promises'
import { JournalReadError } from './journal-file-errors.js'
import type { JournalLine } from './journal-line-schema.js'
import { validateLine } from './parse-journal-line.js'
import { isJournalLineError } from './journal-line-error.js'

/** Bytes after the last newline: a line the writer had not finished when the process died. */
export interface TornTail {
  /** Where the partial line starts, in bytes from the start of the file. */
  byteOffset: number
  /** The partial bytes, decoded as UTF-8. */
  text: string
  /** The line number it would have had. */
  lineNumber: number
}

/** A complete (newline-terminated) line that is not a valid journal line. */
export interface InvalidJournalLine {
  /** 1-based line number. */
  lineNumber: number
  text: string
  /** What is wrong, naming the fields. */
  error: string
}

/** A valid line whose `seq` is not greater than the one before it. It is still returned in `lines`. */
export interface OutOfOrderLine {
  lineNumber: number
  seq: number
  previousSeq: number
}

/**
 * A valid line whose `seq` skips numbers: the lines that held them are gone
 * (deleted, or lost in a copy). A journal's `seq` counts 1, 2, 3... with no
 * hole, so a jump of more than one past the last readable line (and the
 * unreadable lines between) means lines are missing before this one.
 */
export interface SeqGap {
  lineNumber: number
  seq: number
  /** The `seq` this line should have had. */
  expectedSeq: number
}

/**
 * One place where a journal is damaged: a complete line that cannot be read,
 * a `seq` gap (lines missing) or a `seq` that repeats or goes back (a line
 * copied twice, or files mixed). A torn last line (a crash mid-write) is not
 * damage: a crash leaves every complete line readable.
 */
export interface JournalDamage {
  /** 1-based line number in the journal file. */
  readonly lineNumber: number
  readonly kind: 'unreadable' | 'seq-gap' | 'seq-repeat'
  /** What is wrong, starting `line <n>: `. */
  readonly problem: string
}

/** What {@link readJournal} found. Each problem is reported on its own; no complete valid line is left out. */
export interface JournalReadResult {
  /** Every valid complete line, in file order. */
  lines: JournalLine[]
  /** Partial bytes after the last newline (the crash case), or `null` when the file ends cleanly. */
  tornTail: TornTail | null
  /** Complete lines that are not JSON or break the schema, with their line numbers. */
  invalid: InvalidJournalLine[]
  /** Valid lines whose `seq` does not increase; empty for a journal written by one writer. */
  outOfOrder: OutOfOrderLine[]
  /** Valid lines whose `seq` skips numbers (lines missing before them); empty for a journal written by one writer. */
  gaps: SeqGap[]
}

/** The `seq` of a journal's first line (the writer's default start). */
const FIRST_SEQ = 1

/**
 * Every place a journal read is damaged, in line order: unreadable complete
 * lines, `seq` gaps and `seq` repeats. A torn tail is not among them.
 *
 * @example
 * ```ts
 * const damage = journalDamage(readJournal(path))
 * for (const place of damage) console.error(place.problem)
 * ```
 */
export function journalDamage(read: Pick<JournalReadResult, 'invalid' | 'outOfOrder' | 'gaps'>): JournalDamage[] {
  const damage: JournalDamage[] = [
    ...read.invalid.map((line) => ({ lineNumber: line.lineNumber, kind: 'unreadable' as const, problem: describeInvalid(line) })),
    ...read.outOfOrder.map((line) => ({ lineNumber: line.lineNumber, kind: 'seq-repeat' as const, problem: describeOutOfOrder(line) })),
    ...read.gaps.map((gap) => ({ lineNumber: gap.lineNumber, kind: 'seq-gap' as const, problem: describeGap(gap) })),
  ]
  return damage.sort((a, b) => a.lineNumber - b.lineNumber)
}

function describeInvalid(line: InvalidJournalLine): string {
  return `line ${line.lineNumber}: ${line.error}`
}

function describeOutOfOrder(line: OutOfOrderLine): string {
  const what = line.seq === line.previousSeq ? 'repeats the seq of the line before it' : `goes back from seq ${line.previousSeq}`
  return `line ${line.lineNumber}: seq ${line.seq} ${what} (expected ${line.previousSeq + 1}): a line is there twice, or lines of another journal are mixed in`
}

function describeGap(gap: SeqGap): string {
  const missing = gap.seq - gap.expectedSeq
  return `line ${gap.lineNumber}: seq gap, expected ${gap.expectedSeq}, found ${gap.seq}: ${missing === 1 ? 'the line' : `${missing} lines`} before it ${missing === 1 ? 'is' : 'are'} missing`
}

const NEWLINE = 0x0a

/**
 * Reads a journal file. Returns every valid line in order, and reports
 * separately a torn last line (bytes after the last newline, which is what a
 * crash mid-write leaves) and every invalid complete line with its line
 * number. It never throws on a torn or invalid line; it throws
 * {@link JournalReadError} only when the file cannot be read at all.
 * Blank lines are skipped.
 *
 * @example
 * ```ts
 * const { lines, tornTail, invalid } = readJournal('.locus-pi/runs/run-1/journal.jsonl')
 * if (tornTail) console.warn(`the run crashed mid-line at byte ${tornTail.byteOffset}`)
 * ```
 */
export function readJournal(path: string): JournalReadResult {
  let buffer: Buffer
  try {
    buffer = readFileSync(path)
  } catch (error) {
    throw new JournalReadError(path, error)
  }
  return parseJournalBuffer(buffer)
}

/** {@link readJournal} without blocking the event loop while the file is read. */
export async function readJournalAsync(path: string): Promise<JournalReadResult> {
  let buffer: Buffer
  try {
    buffer = await readFile(path)
  } catch (error) {
    throw new JournalReadError(path, error)
  }
  return parseJournalBuffer(buffer)
}

/** What one complete line of a journal turned out to be. */
type ParsedLine = { readonly line: JournalLine } | { readonly invalid: InvalidJournalLine } | undefined

/** Parses one complete line (without its newline); `undefined` for a blank line. */
function parseLineText(lineText: string, lineNumber: number): ParsedLine {
  // A JSON line starts with `{`; only a line starting with whitespace can be blank.
  if (lineText.length === 0 || (lineText.charCodeAt(0) <= 0x20 && lineText.trim().length === 0)) return undefined
  let value: unknown
  try {
    value = JSON.parse(lineText)
  } catch (error) {
    return { invalid: { lineNumber, text: lineText, error: `line ${lineNumber} is not JSON: ${(error as Error).message}` } }
  }
  try {
    // JSON.parse output needs no deep check, except that zod drops own `__proto__` keys:
    // a line that mentions one takes the full check, so both paths return the same value.
    return { line: validateLine(value, lineNumber, !lineText.includes('__proto__')) }
  } catch (error) {
    if (!isJournalLineError(error)) throw error
    return { invalid: { lineNumber, text: lineText, error: error.message } }
  }
}

/** What {@link createLineChecker} keeps aside while it checks lines. */
interface LineChecker {
  readonly invalid: InvalidJournalLine[]
  readonly outOfOrder: OutOfOrderLine[]
  readonly gaps: SeqGap[]
  take(lineText: string, lineNumber: number): JournalLine | undefined
}

/**
 * Checks complete lines in file order, keeping the invalid, out-of-order and
 * gapped ones aside. `seq` must count up by one from {@link FIRST_SEQ} (or 0);
 * an unreadable line between two readable ones may hold one `seq`, so it is
 * not counted as a gap as well.
 */
function createLineChecker(): LineChecker {
  const invalid: InvalidJournalLine[] = []
  const outOfOrder: OutOfOrderLine[] = []
  const gaps: SeqGap[] = []
  let previousSeq: number | undefined
  let unreadableSince = 0
  return {
    invalid,
    outOfOrder,
    gaps,
    take(lineText, lineNumber) {
      const parsed = parseLineText(lineText, lineNumber)
      if (parsed === undefined) return undefined
      if ('invalid' in parsed) {
        invalid.push(parsed.invalid)
        unreadableSince += 1
        return undefined
      }
      const { line } = parsed
      if (previousSeq !== undefined && line.seq <= previousSeq) {
        outOfOrder.push({ lineNumber, seq: line.seq, previousSeq })
      } else {
        const expectedSeq = previousSeq === undefined ? FIRST_SEQ : previousSeq + 1
        // A journal may start at 0; unreadable lines before this one may have held the missing numbers.
        const allowed = expectedSeq + unreadableSince
        if (line.seq > allowed && !(previousSeq === undefined && line.seq === 0)) gaps.push({ lineNumber, seq: line.seq, expectedSeq: allowed })
      }
      previousSeq = line.seq
      unreadableSince = 0
      return line
    },
  }
}

/** Splits a journal's bytes into valid lines, invalid lines and a torn tail. */
function parseJournalBuffer(buffer: Buffer): JournalReadResult {
  const bodyEnd = buffer.lastIndexOf(NEWLINE) + 1
  const text = buffer.toString('utf8', 0, bodyEnd)
  const lines: JournalLine[] = []
  const checker = createLineChecker()
  let lineNumber = 0
  let start = 0
  while (start < text.length) {
    const end = text.indexOf('\n', start)
    const lineText = text.slice(start, end)
    start = end + 1
    lineNumber += 1
    const line = checker.take(lineText, lineNumber)
    if (line !== undefined) lines.push(line)
  }
  const tornTail =
    bodyEnd < buffer.length ? { byteOffset: bodyEnd, text: buffer.toString('utf8', bodyEnd), lineNumber: lineNumber + 1 } : null
  return { lines, tornTail, invalid: checker.invalid, outOfOrder: checker.outOfOrder, gaps: checker.gaps }
}

/** Where a complete line sits in its journal file, so it can be read again on its own with {@link readJournalLineAt}. */
export interface JournalLinePlace {
  /** The line's first byte, from the start of the file. */
  readonly byteOffset: number
  /** The line's length in bytes, without its newline. */
  readonly byteLength: number
}

/** What {@link scanJournal} found besides the lines it handed over. */
export interface JournalScanResult {
  /** Partial bytes after the last newline, as {@link readJournal} reports them. */
  readonly tornTail: TornTail | null
  /** Complete lines that are not valid journal lines. */
  readonly invalid: InvalidJournalLine[]
  /** Valid lines whose `seq` does not increase. */
  readonly outOfOrder: OutOfOrderLine[]
  /** Valid lines whose `seq` skips numbers. */
  readonly gaps: SeqGap[]
  /** Valid lines handed to the visitor. */
  readonly lines: number
}

/** How much of the file {@link scanJournal} holds at once, besides one line longer than this. */
const SCAN_CHUNK_BYTES = 1 << 20

/**
 * Reads a journal file one chunk at a time and hands every valid complete
 * line to `visit` with its place in the file, in file order, keeping nothing:
 * memory stays the size of a chunk (or of the longest line) however long the
 * journal is. It reports a torn tail, invalid lines and out-of-order lines as
 * {@link readJournal} does, and throws {@link JournalReadError} only when the
 * file cannot be read at all. `chunkBytes` (1 MiB by default) sets how much it
 * reads at a time.
 *
 * @example
 * ```ts
 * let agentCalls = 0
 * scanJournal('.locus-pi/runs/run-1/journal.jsonl', (line) => {
 *   if (line.type === 'agent_start') agentCalls += 1
 * })
 * ```
 */
export function scanJournal(
  path: string,
  visit: (line: JournalLine, place: JournalLinePlace) => void,
  options: { readonly chunkBytes?: number } = {},
): JournalScanResult {
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch (error) {
    throw new JournalReadError(path, error)
  }
  const splitter = createLineSplitter()
  try {
    const chunk = Buffer.allocUnsafe(Math.max(1, Math.floor(options.chunkBytes ?? SCAN_CHUNK_BYTES)))
    for (let position = 0; ; ) {
      let read: number
      try {
        read = readSync(fd, chunk, 0, chunk.length, position)
      } catch (error) {
        throw new JournalReadError(path, error)
      }
      if (read === 0) break
      position += read
      splitter.push(chunk.subarray(0, read), visit)
    }
  } finally {
    closeSync(fd)
  }
  return splitter.finish()
}

/**
 * {@link scanJournal} as an async iterable that does not block the event
 * loop: the valid lines of a journal in file order, read a chunk at a time.
 * What it found besides them goes to `onProblem`, once the file has been
 * read: a torn tail, then each damaged place in line order (an unreadable
 * line, a `seq` gap or repeat), which also goes to `onDamage`.
 *
 * @throws {JournalReadError} when the file cannot be read at all.
 * @example
 * ```ts
 * for await (const line of readJournalLines('.locus-pi/runs/run-1/journal.jsonl')) console.log(line.seq)
 * ```
 */
export async function* readJournalLines(
  path: string,
  options: {
    readonly chunkBytes?: number
    readonly onProblem?: (problem: string) => void
    /** Told about each damaged place (not a torn tail), after the last line. */
    readonly onDamage?: (damage: JournalDamage) => void
  } = {},
): AsyncGenerator<JournalLine> {
  let file: FileHandle
  try {
    file = await open(path, 'r')
  } catch (error) {
    throw new JournalReadError(path, error)
  }
  const splitter = createLineSplitter()
  try {
    const chunk = Buffer.allocUnsafe(Math.max(1, Math.floor(options.chunkBytes ?? SCAN_CHUNK_BYTES)))
    for (let position = 0; ; ) {
      let read: number
      try {
        ;({ bytesRead: read } = await file.read(chunk, 0, chunk.length, position))
      } catch (error) {
        throw new JournalReadError(path, error)
      }
      if (read === 0) break
      position += read
      const found: JournalLine[] = []
      splitter.push(chunk.subarray(0, read), (line) => found.push(line))
      yield* found
    }
  } finally {
    await file.close()
  }
  const found = splitter.finish()
  if (found.tornTail !== null) options.onProblem?.(`torn last line at byte ${found.tornTail.byteOffset} (the process stopped mid-write)`)
  for (const damage of journalDamage(found)) {
    options.onProblem?.(damage.problem)
    options.onDamage?.(damage)
  }
}

/** Splits chunks of a journal file into checked lines with their places, holding only the line being read. */
function createLineSplitter(): {
  push(chunk: Buffer, visit: (line: JournalLine, place: JournalLinePlace) => void): void
  finish(): JournalScanResult
} {
  const checker = createLineChecker()
  let lineNumber = 0
  let count = 0
  // `pending` holds the bytes of the line being read, from file offset `pendingOffset`.
  let pending = Buffer.alloc(0)
  let pendingOffset = 0
  return {
    push(chunk, visit) {
      const bytes = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
      let start = 0
      for (let end = bytes.indexOf(NEWLINE, start); end !== -1; end = bytes.indexOf(NEWLINE, start)) {
        lineNumber += 1
        const line = checker.take(bytes.toString('utf8', start, end), lineNumber)
        const place = { byteOffset: pendingOffset + start, byteLength: end - start }
        start = end + 1
        if (line === undefined) continue
        count += 1
        visit(line, place)
      }
      // Copy the unfinished line out of the chunk, which the caller's next read overwrites.
      pending = Buffer.from(bytes.subarray(start))
      pendingOffset += start
    },
    finish() {
      const tornTail = pending.length > 0 ? { byteOffset: pendingOffset, text: pending.toString('utf8'), lineNumber: lineNumber + 1 } : null
      return { tornTail, invalid: checker.invalid, outOfOrder: checker.outOfOrder, gaps: checker.gaps, lines: count }
    },
  }
}

/** Reads lines of one journal file back from their places, through one descriptor and a read-ahead window. */
export interface JournalLineReader {
  /**
   * The valid line at `place`.
   * @throws {JournalReadError} when the file cannot be read or the bytes there are no longer that journal line.
   */
  read(place: JournalLinePlace): JournalLine
  /** Closes the file; a later `read` opens it again. */
  close(): void
}

/** How much {@link openJournalLineReader} reads ahead: a replay asks for lines in file order. */
const READ_AHEAD_BYTES = 64 * 1024

/**
 * Opens a reader for lines of a journal at places {@link scanJournal} gave.
 * The file is opened at the first read and kept open until `close()`; each
 * read that falls outside the bytes already read fetches `windowBytes` (64 KiB
 * by default) from that place on, so reading lines in file order costs one
 * system call per window rather than one per line.
 *
 * @example
 * ```ts
 * const places: JournalLinePlace[] = []
 * scanJournal(path, (line, place) => { if (line.type === 'agent_end') places.push(place) })
 * const reader = openJournalLineReader(path)
 * try {
 *   for (const place of places) console.log(reader.read(place).seq)
 * } finally {
 *   reader.close()
 * }
 * ```
 */
export function openJournalLineReader(path: string, options: { readonly windowBytes?: number } = {}): JournalLineReader {
  const windowBytes = Math.max(1, Math.floor(options.windowBytes ?? READ_AHEAD_BYTES))
  let fd: number | undefined
  let window = Buffer.alloc(0)
  let windowAt = 0
  const fail = (detail: string): never => {
    throw new JournalReadError(path, new Error(detail))
  }
  return {
    read(place) {
      const { byteOffset, byteLength } = place
      if (byteOffset < windowAt || byteOffset + byteLength > windowAt + window.length) {
        try {
          fd ??= openSync(path, 'r')
          const bytes = Buffer.allocUnsafe(Math.max(windowBytes, byteLength))
          const read = readSync(fd, bytes, 0, bytes.length, byteOffset)
          window = bytes.subarray(0, read)
          windowAt = byteOffset
        } catch (error) {
          throw new JournalReadError(path, error)
        }
        if (byteLength > window.length) fail(`only ${window.length} of ${byteLength} bytes at offset ${byteOffset} could be read`)
      }
      const start = byteOffset - windowAt
      const parsed = parseLineText(window.toString('utf8', start, start + byteLength), 0)
      if (parsed === undefined || 'invalid' in parsed) {
        return fail(`the bytes at offset ${byteOffset} are no longer a journal line${parsed === undefined ? '' : `: ${parsed.invalid.error}`}`)
      }
      return parsed.line
    },
    close() {
      window = Buffer.alloc(0)
      windowAt = 0
      if (fd === undefined) return
      closeSync(fd)
      fd = undefined
    },
  }
}

/**
 * Reads one line of a journal file again from the place {@link scanJournal}
 * gave it, and validates it; {@link openJournalLineReader} reads many.
 *
 * @throws {JournalReadError} when the file cannot be read or the bytes there are no longer that journal line.
 */
export function readJournalLineAt(path: string, place: JournalLinePlace): JournalLine {
  const reader = openJournalLineReader(path, { windowBytes: place.byteLength })
  try {
    return reader.read(place)
  } finally {
    reader.close()
  }
}
