import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
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

/** Splits a journal's bytes into valid lines, invalid lines and a torn tail. */
function parseJournalBuffer(buffer: Buffer): JournalReadResult {
  const bodyEnd = buffer.lastIndexOf(NEWLINE) + 1
  const text = buffer.toString('utf8', 0, bodyEnd)
  const lines: JournalLine[] = []
  const invalid: InvalidJournalLine[] = []
  const outOfOrder: OutOfOrderLine[] = []
  let previousSeq: number | undefined
  let lineNumber = 0
  let start = 0
  while (start < text.length) {
    const end = text.indexOf('\n', start)
    const lineText = text.slice(start, end)
    start = end + 1
    lineNumber += 1
    // A JSON line starts with `{`; only a line starting with whitespace can be blank.
    if (lineText.length === 0 || (lineText.charCodeAt(0) <= 0x20 && lineText.trim().length === 0)) continue
    let value: unknown
    try {
      value = JSON.parse(lineText)
    } catch (error) {
      invalid.push({ lineNumber, text: lineText, error: `line ${lineNumber} is not JSON: ${(error as Error).message}` })
      continue
    }
    let line: JournalLine
    try {
      // JSON.parse output needs no deep check, except that zod drops own `__proto__` keys:
      // a line that mentions one takes the full check, so both paths return the same value.
      line = validateLine(value, lineNumber, !lineText.includes('__proto__'))
    } catch (error) {
      if (!isJournalLineError(error)) throw error
      invalid.push({ lineNumber, text: lineText, error: error.message })
      continue
    }
    if (previousSeq !== undefined && line.seq <= previousSeq) outOfOrder.push({ lineNumber, seq: line.seq, previousSeq })
    previousSeq = line.seq
    lines.push(line)
  }
  const tornTail =
    bodyEnd < buffer.length ? { byteOffset: bodyEnd, text: buffer.toString('utf8', bodyEnd), lineNumber: lineNumber + 1 } : null
  return { lines, tornTail, invalid, outOfOrder }
}
