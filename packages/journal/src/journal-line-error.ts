import { LocusError, hasLocusErrorCode } from '@locus/outcome'

export const JOURNAL_LINE_INVALID = 'JOURNAL_LINE_INVALID'

/** What a {@link JournalLineError} knows about the refused line. */
export interface JournalLineErrorDetails {
  /** 1-based line number in the journal file, when the line came from a file. */
  readonly lineNumber?: number | undefined
  /** Fields of the attempt trio the line lacks, when that is why it was refused. */
  readonly missing?: readonly string[] | undefined
  /** One `field: problem` entry per thing wrong with the line. */
  readonly problems?: readonly string[] | undefined
  readonly cause?: unknown
}

/**
 * A journal line does not match its schema. The message names the line
 * number (when known), the line type and every field that is wrong.
 *
 * @example
 * ```ts
 * try { parseJournalLine(value, 12) } catch (error) {
 *   if (JournalLineError.isInstance(error)) console.error(error.lineNumber, error.missing)
 * }
 * ```
 */
export class JournalLineError extends LocusError {
  declare readonly code: typeof JOURNAL_LINE_INVALID
  readonly lineNumber: number | undefined
  /** Attempt-trio fields the line lacks; set only when the trio was incomplete. */
  readonly missing: readonly string[] | undefined
  readonly problems: readonly string[]

  constructor(message: string, details: JournalLineErrorDetails = {}) {
    super(message, { code: JOURNAL_LINE_INVALID, cause: details.cause })
    this.name = 'JournalLineError'
    this.lineNumber = details.lineNumber
    this.missing = details.missing
    this.problems = details.problems ?? []
  }

  static override isInstance(value: unknown): value is JournalLineError {
    return isJournalLineError(value)
  }
}

/** True for a {@link JournalLineError} from any installed copy of this package. */
export function isJournalLineError(value: unknown): value is JournalLineError {
  return hasLocusErrorCode(value, JOURNAL_LINE_INVALID)
}
