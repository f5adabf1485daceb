import { LocusError, hasLocusErrorCode } from '@locus/outcome'

export const JOURNAL_CLOSED = 'JOURNAL_CLOSED'
export const JOURNAL_WRITE_FAILED = 'JOURNAL_WRITE_FAILED'
export const JOURNAL_WRITER_OPTIONS_INVALID = 'JOURNAL_WRITER_OPTIONS_INVALID'
export const JOURNAL_READ_FAILED = 'JOURNAL_READ_FAILED'

/** Codes of the errors the journal writer and reader throw. */
export const JOURNAL_FILE_ERROR_CODES = [JOURNAL_CLOSED, JOURNAL_WRITE_FAILED, JOURNAL_WRITER_OPTIONS_INVALID, JOURNAL_READ_FAILED] as const
export type JournalFileErrorCode = (typeof JOURNAL_FILE_ERROR_CODES)[number]

/**
 * A line was appended after `close()`. The line was not written: a closed
 * journal refuses rather than dropping the line silently.
 */
export class JournalClosedError extends LocusError {
  declare readonly code: typeof JOURNAL_CLOSED
  /** The journal file. */
  readonly path: string
  /** The `type` of the refused line. */
  readonly lineType: string | undefined

  constructor(path: string, lineType: string | undefined) {
    super(
      `Cannot append ${lineType === undefined ? 'a line' : `a ${lineType} line`} to ${path}: the journal writer is closed. ` +
        'Append every line before close(), or open a new writer to continue the file.',
      { code: JOURNAL_CLOSED },
    )
    this.name = 'JournalClosedError'
    this.path = path
    this.lineType = lineType
  }

  static override isInstance(value: unknown): value is JournalClosedError {
    return hasLocusErrorCode(value, JOURNAL_CLOSED)
  }
}

/**
 * The operating system refused a write or fsync of the journal (disk full,
 * permissions, a removed directory). The writer stops accepting lines after
 * this, because the file may now end in a partial line.
 */
export class JournalWriteError extends LocusError {
  declare readonly code: typeof JOURNAL_WRITE_FAILED
  readonly path: string

  constructor(path: string, operation: string, cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause)
    super(`Could not ${operation} the journal ${path}: ${detail}. Check the disk and permissions; the writer accepts no more lines.`, {
      code: JOURNAL_WRITE_FAILED,
      cause,
    })
    this.name = 'JournalWriteError'
    this.path = path
  }

  static override isInstance(value: unknown): value is JournalWriteError {
    return hasLocusErrorCode(value, JOURNAL_WRITE_FAILED)
  }
}

/** `createJournalWriter` was given options it cannot work with; the message names the field. */
export class JournalWriterOptionsError extends LocusError {
  declare readonly code: typeof JOURNAL_WRITER_OPTIONS_INVALID
  readonly problems: readonly string[]

  constructor(problems: readonly string[], cause?: unknown) {
    super(`Invalid journal writer options: ${problems.join('; ')}.`, { code: JOURNAL_WRITER_OPTIONS_INVALID, cause })
    this.name = 'JournalWriterOptionsError'
    this.problems = problems
  }

  static override isInstance(value: unknown): value is JournalWriterOptionsError {
    return hasLocusErrorCode(value, JOURNAL_WRITER_OPTIONS_INVALID)
  }
}


/**
 * The journal file could not be read at all (missing, a directory, no
 * permission). A torn or invalid line is never this error: `readJournal`
 * reports those in its result.
 */
export class JournalReadError extends LocusError {
  declare readonly code: typeof JOURNAL_READ_FAILED
  readonly path: string

  constructor(path: string, cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause)
    super(`Could not read the journal ${path}: ${detail}. Check the path: it must name an execution's journal file (a file store names it as the execution's journalLocation).`, {
      code: JOURNAL_READ_FAILED,
      cause,
    })
    this.name = 'JournalReadError'
    this.path = path
  }

  static override isInstance(value: unknown): value is JournalReadError {
    return hasLocusErrorCode(value, JOURNAL_READ_FAILED)
  }
}
