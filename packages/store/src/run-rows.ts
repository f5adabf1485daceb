import type { JournalLine } from '@locus/journal'
import { StoreOptionsError } from './store-errors.js'

/** The kinds of execution a row is folded from (the store's `ExecutionKind`, named here so the row types stay a leaf of run-store). */
type ExecutionKind = 'root' | 'resume' | 'replay' | 'child'

/**
 * Where a run stands as its summary row says: `queued` until its first line
 * (a run enqueued for a worker, or one whose execution was just created),
 * `running` from its `run_start`,
 * `waiting` while a deferral it opened is unanswered or a `sleep()` timer has
 * not fired, `suspended` after an execution stopped on purpose (a resume
 * continues it), and its disposition once `run_end` is written. A row never
 * says more than the journal: a process that died leaves the last status it
 * wrote (readers that need the full story fold the journal).
 */
export const RUN_ROW_STATUSES = ['queued', 'running', 'waiting', 'suspended', 'completed', 'failed', 'cancelled'] as const
export type RunRowStatus = (typeof RUN_ROW_STATUSES)[number]

/**
 * One run's summary row: what a listing needs without reading a journal line.
 * The store keeps it up to date from the lines its writers append (the file
 * adapter in `run.json` beside the journal, PostgreSQL in `locus_runs`, memory
 * in a map), so `listRunRows` reads rows only.
 */
export interface RunRow {
  readonly runId: string
  /** The workflow of its `run_start`; `undefined` until that line is written. */
  readonly workflow: string | undefined
  readonly status: RunRowStatus
  /** The latest root or resume execution (replays and children never move it). */
  readonly executionId: string
  /** When the row was first written, epoch milliseconds (the order of listings). */
  readonly createdAt: number
  /** The `ts` of the last line that changed the row. */
  readonly updatedAt: string
  /** The first `run_start`'s `ts`. */
  readonly startedAt: string | undefined
  /** The last `run_end`'s `ts`, once written. */
  readonly endedAt: string | undefined
  /** `run_end.answerOutcome`, once written. */
  readonly answerOutcome: string | undefined
  /** Deferral and timer ids the run waits on (non-empty exactly while `waiting`, or suspended on them). */
  readonly waitingOn: readonly string[]
  /** The `seq` of the last line of `executionId` folded into the row. */
  readonly lastSeq: number
  /** The open `sleep()` timers and when each is due (ISO 8601): a parked run wakes at the earliest. */
  readonly timers: Readonly<Record<string, string>>
}

/** When the earliest open timer of a row is due (epoch milliseconds), if it has one. */
export function wakeAtOf(row: RunRow): number | undefined {
  let earliest: number | undefined
  for (const dueAt of Object.values(row.timers)) {
    const at = Date.parse(dueAt)
    if (earliest === undefined || at < earliest) earliest = at
  }
  return earliest
}

/** Which rows {@link RunStore.listRunRows} returns. */
export interface ListRunRowsFilter {
  readonly workflow?: string | undefined
  readonly status?: RunRowStatus | undefined
  /** Only runs created at or after this time (epoch milliseconds). */
  readonly since?: number | undefined
  /** The `nextCursor` of the page before. */
  readonly cursor?: string | undefined
  /** At most this many rows, newest first. @default 50 */
  readonly limit?: number | undefined
}

/** A page of rows, newest first, and the cursor of the next page (`undefined` on the last). */
export interface RunRowPage {
  readonly rows: readonly RunRow[]
  readonly nextCursor: string | undefined
}

export const DEFAULT_ROW_PAGE = 50
export const MAX_ROW_PAGE = 1000

/** A fresh row for a run whose first execution was just created. */
export function newRunRow(runId: string, executionId: string, createdAt: number): RunRow {
  return {
    runId,
    workflow: undefined,
    status: 'queued',
    executionId,
    createdAt,
    updatedAt: new Date(createdAt).toISOString(),
    startedAt: undefined,
    endedAt: undefined,
    answerOutcome: undefined,
    waitingOn: [],
    lastSeq: -1,
    timers: {},
  }
}

/** True for the `info` line a suspended execution writes last (`data.suspended`). */
function isSuspension(line: JournalLine): boolean {
  if (line.type !== 'log') return false
  const data: unknown = line.data
  return typeof data === 'object' && data !== null && !Array.isArray(data) && (data as { suspended?: unknown }).suspended === true
}

function statusOf(waitingOn: readonly string[]): RunRowStatus {
  return waitingOn.length > 0 ? 'waiting' : 'running'
}

/**
 * The row after one appended line of an execution of `kind`. Returns the same
 * object when the line changes nothing a listing shows, so a writer persists
 * only real changes. Replays never touch the row; a child's deferrals and
 * timers make its run wait, its own start and end do not end the run.
 */
export function foldRunRow(row: RunRow, line: JournalLine, kind: ExecutionKind): RunRow {
  if (kind === 'replay') return row
  const own = kind !== 'child'
  const ended = row.status === 'completed' || row.status === 'failed' || row.status === 'cancelled'
  switch (line.type) {
    case 'run_start':
      if (!own) return row
      return {
        ...row,
        workflow: row.workflow ?? line.workflow,
        executionId: line.executionId,
        startedAt: row.startedAt ?? line.ts,
        status: statusOf(row.waitingOn),
        endedAt: undefined,
        updatedAt: line.ts,
        lastSeq: line.seq,
      }
    case 'run_end':
      if (!own) return row
      return {
        ...row,
        executionId: line.executionId,
        status: line.disposition,
        endedAt: line.ts,
        answerOutcome: line.answerOutcome,
        waitingOn: [],
        timers: {},
        updatedAt: line.ts,
        lastSeq: line.seq,
      }
    case 'deferred_open':
    case 'timer_start': {
      const id = line.type === 'deferred_open' ? line.deferredId : line.timerId
      if (ended || row.waitingOn.includes(id)) return row
      const waitingOn = [...row.waitingOn, id]
      const timers = line.type === 'timer_start' ? { ...row.timers, [id]: line.dueAt } : row.timers
      return { ...row, waitingOn, timers, status: row.status === 'suspended' ? row.status : statusOf(waitingOn), updatedAt: line.ts }
    }
    case 'deferred_settled':
    case 'timer_fired': {
      const id = line.type === 'deferred_settled' ? line.deferredId : line.timerId
      if (!row.waitingOn.includes(id)) return row
      const waitingOn = row.waitingOn.filter((candidate) => candidate !== id)
      const timers = Object.fromEntries(Object.entries(row.timers).filter(([timerId]) => timerId !== id))
      return { ...row, waitingOn, timers, status: ended || row.status === 'suspended' ? row.status : statusOf(waitingOn), updatedAt: line.ts }
    }
    case 'log':
      if (!own || ended || !isSuspension(line)) return row
      return { ...row, status: 'suspended', updatedAt: line.ts, lastSeq: line.seq }
    default:
      return row
  }
}

/** Rebuilds a row from every line of a run's executions, in creation order (for a missing or damaged `run.json`). */
export function rowFromLines(runId: string, createdAt: number, executions: Iterable<{ readonly executionId: string; readonly kind: ExecutionKind; readonly lines: Iterable<JournalLine> }>): RunRow {
  let row = newRunRow(runId, runId, createdAt)
  for (const execution of executions) {
    for (const line of execution.lines) row = foldRunRow(row, line, execution.kind)
  }
  return row
}

/** Checks a parsed `run.json` (or a PostgreSQL `summary`) is a row; `undefined` when it is not, so the caller rebuilds it. */
export function parseRunRow(value: unknown): RunRow | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const row = value as Partial<Record<keyof RunRow, unknown>>
  if (typeof row.runId !== 'string' || typeof row.executionId !== 'string') return undefined
  if (typeof row.createdAt !== 'number' || typeof row.updatedAt !== 'string' || typeof row.lastSeq !== 'number') return undefined
  if (typeof row.status !== 'string' || !(RUN_ROW_STATUSES as readonly string[]).includes(row.status)) return undefined
  if (!Array.isArray(row.waitingOn) || !row.waitingOn.every((id) => typeof id === 'string')) return undefined
  const optionalString = (field: unknown): string | undefined => (typeof field === 'string' ? field : undefined)
  return {
    runId: row.runId,
    workflow: optionalString(row.workflow),
    status: row.status as RunRowStatus,
    executionId: row.executionId,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    startedAt: optionalString(row.startedAt),
    endedAt: optionalString(row.endedAt),
    answerOutcome: optionalString(row.answerOutcome),
    waitingOn: row.waitingOn,
    lastSeq: row.lastSeq,
    timers: typeof row.timers === 'object' && row.timers !== null && !Array.isArray(row.timers) && Object.values(row.timers).every((dueAt) => typeof dueAt === 'string') ? (row.timers as Record<string, string>) : {},
  }
}

interface RowCursor {
  readonly createdAt: number
  readonly runId: string
}

/** The opaque cursor after `row` in a newest-first listing. */
export function encodeRowCursor(row: { readonly createdAt: number; readonly runId: string }): string {
  return Buffer.from(JSON.stringify([row.createdAt, row.runId]), 'utf8').toString('base64url')
}

/** Decodes a cursor of {@link encodeRowCursor}; a cursor that does not decode is a usage error naming it. */
export function decodeRowCursor(cursor: string): RowCursor {
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    parsed = undefined
  }
  if (!Array.isArray(parsed) || parsed.length !== 2 || typeof parsed[0] !== 'number' || typeof parsed[1] !== 'string') {
    throw new StoreOptionsError(`listRunRows: cursor "${cursor}" does not decode; pass the nextCursor of the page before, unchanged.`)
  }
  return { createdAt: parsed[0], runId: parsed[1] }
}

/** Validates a filter once for every adapter: a clear error for a bad status or limit. */
export function checkRowFilter(filter: ListRunRowsFilter): { readonly limit: number; readonly after: RowCursor | undefined } {
  if (filter.status !== undefined && !(RUN_ROW_STATUSES as readonly string[]).includes(filter.status)) {
    throw new StoreOptionsError(`listRunRows: status "${filter.status}" is not one of ${RUN_ROW_STATUSES.join(', ')}.`)
  }
  const limit = filter.limit ?? DEFAULT_ROW_PAGE
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_ROW_PAGE) {
    throw new StoreOptionsError(`listRunRows: limit must be an integer from 1 to ${String(MAX_ROW_PAGE)}, got ${String(filter.limit)}.`)
  }
  return { limit, after: filter.cursor === undefined ? undefined : decodeRowCursor(filter.cursor) }
}

/** True when `row` comes after `after` in newest-first order (created earlier, or at once with a smaller id). */
function isAfter(row: RowCursor, after: RowCursor): boolean {
  return row.createdAt < after.createdAt || (row.createdAt === after.createdAt && row.runId < after.runId)
}

/** One page of rows over rows held in memory (the file and memory adapters). */
export function pageOfRows(rows: Iterable<RunRow>, filter: ListRunRowsFilter): RunRowPage {
  const { limit, after } = checkRowFilter(filter)
  const kept = [...rows].filter(
    (row) =>
      (filter.workflow === undefined || row.workflow === filter.workflow) &&
      (filter.status === undefined || row.status === filter.status) &&
      (filter.since === undefined || row.createdAt >= filter.since) &&
      (after === undefined || isAfter(row, after)),
  )
  kept.sort((a, b) => b.createdAt - a.createdAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0))
  const page = kept.slice(0, limit)
  const last = page.at(-1)
  return { rows: page, nextCursor: kept.length > limit && last !== undefined ? encodeRowCursor(last) : undefined }
}
