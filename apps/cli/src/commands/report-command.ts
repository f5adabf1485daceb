import { formatCostReport, formatGapsReport, formatOutcomeReport, readOutcomeReport } from '@locus/partial'
import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { describeMetrics, openMetricsForReading } from '../open-metrics.js'
import { resolveRunsDir } from '../runs-dir.js'
import { styleFor } from '../style.js'
import type { OutputFlags } from './run-flags.js'
import { CliError } from '../cli-error.js'

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
    if (flags.json === true) {
      io.stdout.write(`${JSON.stringify(report)}\n`)
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
    ]
    io.stdout.write(`${out.join('\n')}\n`)
    return EXIT_CODES.completed
  } finally {
    await store.close()
  }
}
