import { JOURNAL_SCHEMA_VERSION, type JournalLine, type JournalLineInput } from './journal-line-schema.js'
import { validateLine } from './parse-journal-line.js'

/** What {@link createLineStamper} needs: whose lines they are and where `seq` starts. */
export interface LineStamperOptions {
  readonly runId: string
  readonly executionId: string
  /** `seq` the first stamped line gets. @default 1 */
  readonly startSeq?: number | undefined
  /** Clock for `ts`. @default () => new Date() */
  readonly now?: (() => Date) | undefined
}

/**
 * Turns a line input into a journal line: the common fields (`v`, `seq`,
 * `ts`, `runId`, `executionId`) come first and are always the stamper's own,
 * whatever the caller passed, and the result is validated against the line
 * schema. `seq` advances only when a line was accepted, so a refused line
 * leaves no hole. Every store's journal sink stamps through one of these, so
 * a line reads the same whichever medium it was written to.
 */
export interface LineStamper {
  /** @throws {JournalLineError} when the line breaks the schema; `seq` does not advance. */
  stamp(input: JournalLineInput): JournalLine
  /** `seq` of the last stamped line, or `startSeq - 1` before the first. */
  readonly lastSeq: number
  /** The clock reading (epoch milliseconds) the last stamped line's `ts` holds. */
  readonly lastStampMs: number
}

export function createLineStamper(options: LineStamperOptions): LineStamper {
  const { runId, executionId } = options
  const now = options.now ?? (() => new Date())
  let seq = (options.startSeq ?? 1) - 1
  let lastStampMs = 0
  return {
    get lastSeq() {
      return seq
    },
    get lastStampMs() {
      return lastStampMs
    },
    stamp(input) {
      const draft: Record<string, unknown> = { v: JOURNAL_SCHEMA_VERSION, seq: 0, ts: '', type: undefined, runId: '', executionId: '' }
      Object.assign(draft, input)
      draft.v = JOURNAL_SCHEMA_VERSION
      draft.seq = seq + 1
      const at = now()
      draft.ts = at.toISOString()
      draft.runId = runId
      draft.executionId = executionId
      const line = validateLine(draft, undefined, false)
      seq += 1
      lastStampMs = at.getTime()
      return line
    },
  }
}
