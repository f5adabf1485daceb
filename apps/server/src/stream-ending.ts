import type { RunRow, StreamRead } from '@locus/store'

/** How often an idle stream asks whether the run ended. */
export const STREAM_END_CHECK_MS = 500
/**
 * After the run's last `run_end`, how long its stream may still take to land
 * (the writer flushes its last batch then); past it a run that ended has
 * nothing more to stream even when its stream's own end mark is older (the
 * first execution's, when a resume ran after it).
 */
const STREAM_SETTLE_MS = 2_000

const TERMINAL_ROW_STATUSES: ReadonlySet<RunRow['status']> = new Set(['completed', 'failed', 'cancelled'])

/** Whether a run has ended and its stream has everything it will get, from its row and a read of its stream. */
export function streamComplete(row: RunRow | undefined, read: StreamRead, now: number): boolean {
  if (row === undefined || !TERMINAL_ROW_STATUSES.has(row.status)) return false
  const endedAt = row.endedAt === undefined ? undefined : Date.parse(row.endedAt)
  if (endedAt === undefined || Number.isNaN(endedAt)) return true
  // The stream's end mark is written after its last batch landed.
  if (read.endedAt !== undefined && read.endedAt >= endedAt) return true
  return now - endedAt >= STREAM_SETTLE_MS
}
