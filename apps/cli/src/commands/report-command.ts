import { formatCostReport, formatGapsReport, formatOutcomeReport, readOutcomeReport } from '@locus/partial'
import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { describeMetrics, openMetricsForReading } from '../open-metrics.js'
import { resolveRunsDir } from '../runs-dir.js'
import { styleFor } from '../style.js'
import type { OutputFlags } from './run-flags.js'
import { CliError } from '../cli-error.js'
import { formatTable } from '../format-table.js'
import { openRunStore } from '../open-run-store.js'
import type { SlotOutcome } from '@locus/store'

/** Flags of `locus report`. */
export interface ReportFlags extends OutputFlags {
  /** The window in milliseconds, from `--since 30d`. @default 30 days */
  readonly since?: number | undefined
  /** For tests and reproducible reports: what "now" is. @default the current time */
  readonly now?: Date | undefined
}

/** The default window of `locus report`. */
export const DEFAULT_REPORT_SINCE_MS = 30 * 24 * 60 * 60 * 1000

/**
 * `locus report`: the outcome table (complete, partial, cannot_answer, failed,
 * with correctness where graded), the gaps-per-tool table, and the money:
 * dollars per answer outcome with their retry overhead, and the dollars each
 * tool's blocking gaps alone lost, over a window, from the outcome store runs
 * are recorded in. `--json` adds the same figures per day. It only reads: nothing is
 * created or written under the runs directory, so a read-only one (or one
 * without a store yet) works.
 */
export async function reportCommand(flags: ReportFlags, io: CliIo): Promise<ExitCode> {
  const runsDir = resolveRunsDir(flags.runsDir, io)
  const sinceMs = flags.since ?? DEFAULT_REPORT_SINCE_MS
  const since = new Date((flags.now ?? new Date()).getTime() - sinceMs)
  let store: Awaited<ReturnType<typeof openMetricsForReading>>
  try {
    store = await openMetricsForReading(runsDir, io.env)
  } catch (error) {
    throw new CliError('OUTCOME_STORE_UNREADABLE', `Cannot read the outcome store (${describeMetrics(runsDir, io.env)}): ${(error as Error).message}`, { cause: error })
  }
  try {
    const report = await readOutcomeReport(store, since)
    const unfired = await unfiredSlots(runsDir, io, since)
    if (flags.json === true) {
      io.stdout.write(`${JSON.stringify({ ...report, schedules: { unfired } })}\n`)
      return EXIT_CODES.completed
    }
    const { outcomes, gaps, cost } = report
    const priced = cost.outcomes.some((row) => row.pricedRuns > 0)
    const style = styleFor(io.stdout, io.env)
    const out = [
      style.bold(`Outcomes since ${since.toISOString().slice(0, 16).replace('T', ' ')} UTC`) + style.dim(` (${describeMetrics(runsDir, io.env)})`),
      formatOutcomeReport(outcomes),
      '',
      style.bold('Gaps per tool'),
      gaps.tools.length === 0 ? style.dim('no gaps recorded in this window') : formatGapsReport(gaps),
      '',
      style.bold('Cost per answer outcome'),
      priced ? formatCostReport(cost) : style.dim('no priced run in this window; runs record their cost when priced (locus run --prices prices.json)'),
      '',
      style.bold('Schedule slots that did not start a run'),
      unfired.length === 0
        ? style.dim('none in this window')
        : formatTable([['SCHEDULE', 'SLOT', 'OUTCOME', 'WHY'], ...unfired.map((slot) => [slot.scheduleId, slot.slot, slot.outcome, slot.error ?? (slot.runId === undefined ? '' : `run ${slot.runId} still going`)])]),
    ]
    io.stdout.write(`${out.join('\n')}\n`)
    return EXIT_CODES.completed
  } finally {
    await store.close()
  }
}

/** A slot of a schedule that ended without starting a run: skipped, missed, paused or failed to start. */
export interface UnfiredSlot {
  readonly scheduleId: string
  readonly slot: string
  readonly outcome: Exclude<SlotOutcome, 'started'>
  readonly runId?: string
  readonly error?: string
}

/**
 * The firings that did not happen in the window, oldest first, from the run
 * store's schedule records (PostgreSQL with `LOCUS_DATABASE_URL`, else the
 * runs directory). Only reads: a runs directory without schedules has none.
 */
async function unfiredSlots(runsDir: string, io: CliIo, since: Date): Promise<UnfiredSlot[]> {
  const url = io.env.LOCUS_DATABASE_URL
  const { store, close } = openRunStore(url !== undefined && url !== '' ? { databaseUrl: url } : { runsDir }, io, { maxConnections: 1 })
  try {
    const schedules = store.schedules
    if (schedules === undefined) return []
    const unfired: UnfiredSlot[] = []
    let states: Awaited<ReturnType<typeof schedules.listSchedules>>
    try {
      states = await schedules.listSchedules()
    } catch (error) {
      // A database holding only the outcome store (no run store tables yet, code 42P01) keeps no schedules.
      if ((error as { code?: unknown }).code === '42P01') return []
      throw error
    }
    for (const state of states) {
      for (const record of await schedules.listSlots(state.schedule.id)) {
        if (record.outcome === 'started' || Date.parse(record.slot) < since.getTime()) continue
        unfired.push({
          scheduleId: state.schedule.id,
          slot: record.slot,
          outcome: record.outcome,
          ...(record.runId === undefined ? {} : { runId: record.runId }),
          ...(record.error === undefined ? {} : { error: record.error }),
        })
      }
    }
    return unfired.sort((a, b) => a.slot.localeCompare(b.slot) || a.scheduleId.localeCompare(b.scheduleId))
  } finally {
    await close()
  }
}
