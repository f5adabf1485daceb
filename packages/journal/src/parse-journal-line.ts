import type { z } from 'zod'
import {
  ATTEMPT_TRIO_FIELDS,
  ATTEMPT_TRIO_LINE_TYPES,
  JOURNAL_LINE_TYPES,
  JOURNAL_SCHEMA_VERSION,
  JournalLineSchema,
  type JournalLine,
} from './journal-line-schema.js'
import { JournalLineError } from './journal-line-error.js'
import { isValidLineFast } from './line-fast-path.js'

const TRIO_REQUIRED: ReadonlySet<string> = new Set(['agent_start', 'agent_end'])
const TRIO_CARRIERS: ReadonlySet<string> = new Set(ATTEMPT_TRIO_LINE_TYPES)

/**
 * Validates one journal line (an already parsed JSON value) and returns it
 * typed. It refuses a line whose attempt trio is incomplete, naming the
 * missing fields in `error.missing`, and any other schema violation, naming
 * each field. The zod schema {@link JournalLineSchema} is the contract; a
 * precompiled check answers the common case faster with the same verdict.
 *
 * @param lineNumber - 1-based position in the file, quoted in the error.
 * @throws {JournalLineError} code `JOURNAL_LINE_INVALID`.
 *
 * @example
 * ```ts
 * const line = parseJournalLine(JSON.parse(text), 3)
 * if (line.type === 'agent_end' && line.status === 'failed') console.log(line.failureCause)
 * ```
 */
export function parseJournalLine(value: unknown, lineNumber?: number): JournalLine {
  return validateLine(value, lineNumber, false)
}

/**
 * The shared implementation. `trustedJson` says the value came straight from
 * `JSON.parse`, which lets the fast path skip a deep walk of JSON payloads.
 *
 * @internal
 */
export function validateLine(value: unknown, lineNumber: number | undefined, trustedJson: boolean): JournalLine {
  refuseIncompleteTrio(value, lineNumber)
  if (isValidLineFast(value, trustedJson)) return value as JournalLine
  const parsed = JournalLineSchema.safeParse(value)
  if (parsed.success) return parsed.data
  throw lineError(value, lineNumber, parsed.error)
}

function where(lineNumber: number | undefined, type: unknown): string {
  const typeText = typeof type === 'string' ? `${type} line` : 'journal line'
  return lineNumber === undefined ? `Invalid ${typeText}` : `Invalid ${typeText} at line ${lineNumber}`
}

function refuseIncompleteTrio(value: unknown, lineNumber: number | undefined): void {
  if (typeof value !== 'object' || value === null) return
  const record = value as Record<string, unknown>
  const type = record.type
  if (typeof type !== 'string' || !TRIO_CARRIERS.has(type)) return
  // Counted without allocating: this runs on every agent line the reader sees.
  const presentCount =
    Number(record.attempt !== undefined) + Number(record.attempts !== undefined) + Number(record.logicalCallId !== undefined)
  if (presentCount === ATTEMPT_TRIO_FIELDS.length) return
  if (presentCount === 0 && !TRIO_REQUIRED.has(type)) return
  const missing = ATTEMPT_TRIO_FIELDS.filter((field) => record[field] === undefined)
  const present = ATTEMPT_TRIO_FIELDS.filter((field) => record[field] !== undefined)
  const rule =
    present.length === 0
      ? `an ${type} line records one physical attempt and must carry attempt, attempts and logicalCallId`
      : `attempt, attempts and logicalCallId travel together, but it carries ${present.join(', ')} without ${missing.join(', ')}`
  throw new JournalLineError(`${where(lineNumber, type)}: ${rule}. Write all three fields of the attempt trio.`, {
    lineNumber,
    missing,
    problems: missing.map((field) => `${field}: missing (attempt trio)`),
  })
}

function lineError(value: unknown, lineNumber: number | undefined, error: z.ZodError): JournalLineError {
  const type = typeof value === 'object' && value !== null ? (value as Record<string, unknown>).type : undefined
  let problems: string[]
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems = [`line: expected a JSON object, got ${Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value}`]
  } else if (typeof type !== 'string' || !(JOURNAL_LINE_TYPES as readonly string[]).includes(type)) {
    problems = [`type: expected one of ${JOURNAL_LINE_TYPES.join(', ')}, got ${type === undefined ? 'nothing' : JSON.stringify(type)}`]
  } else {
    const version = (value as Record<string, unknown>).v
    const wrongVersion = version !== JOURNAL_SCHEMA_VERSION && version !== undefined
    problems = error.issues
      .filter((issue) => !(wrongVersion && issue.path.length === 1 && issue.path[0] === 'v'))
      .map((issue) => {
      const path = issue.path.length === 0 ? 'line' : issue.path.map(String).join('.')
      return `${path}: ${issue.message}`
    })
    if (wrongVersion) {
      problems.unshift(`v: this reader understands journal schema version ${JOURNAL_SCHEMA_VERSION}, the line has ${JSON.stringify(version)}`)
    }
  }
  return new JournalLineError(`${where(lineNumber, type)}: ${problems.join('; ')}`, { lineNumber, problems, cause: error })
}
