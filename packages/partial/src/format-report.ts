import type { CostReport, GapsReport, OutcomeReport } from './outcome-store.js'

const number = new Intl.NumberFormat('en-US')

function formatShare(share: number | null): string {
  return share === null ? 'n/a' : share.toFixed(2)
}

/**
 * The outcome report as a table for a terminal: runs and correctness per
 * outcome. Correctness is `n/a` where there is no answer to grade.
 *
 * @example
 * ```ts
 * console.log(formatOutcomeReport(await store.outcomeReport()))
 * // Outcome        Runs  Correct
 * // complete      2,641  0.95
 * // ...
 * ```
 */
export function formatOutcomeReport(report: OutcomeReport): string {
  const rows: [string, string, string][] = [
    ['Outcome', 'Runs', 'Correct'],
    ['complete', number.format(report.complete), formatShare(report.correctComplete)],
    ['partial', number.format(report.partial), formatShare(report.correctPartial)],
    ['cannot_answer', number.format(report.cannotAnswer), 'n/a'],
    ['failed', number.format(report.failed), 'n/a'],
  ]
  return formatColumns(rows)
}

/** The gaps report as a table: per tool, gaps, blocking gaps and the tool's share of all gaps. */
export function formatGapsReport(report: GapsReport): string {
  const rows: [string, string, string, string][] = [
    ['Tool', 'Gaps', 'Blocking', 'Share'],
    ...report.tools.map((row): [string, string, string, string] => [
      row.tool,
      number.format(row.gaps),
      number.format(row.blocking),
      report.totalGaps === 0 ? 'n/a' : `${Math.round((row.gaps / report.totalGaps) * 100)}%`,
    ]),
  ]
  return formatColumns(rows)
}

/**
 * The cost report as two tables: dollars per answer outcome (with the retry
 * overhead of each), then the dollars each tool's blocking gaps alone lost.
 * Amounts are exact, as recorded; runs recorded without a cost are counted
 * apart, never as $0.
 *
 * @example
 * ```ts
 * console.log(formatCostReport(await store.costReport()))
 * ```
 */
export function formatCostReport(report: CostReport): string {
  const outcomes = formatColumns([
    ['Outcome', 'Runs', 'Priced', 'Cost', 'Retry overhead'],
    ...report.outcomes.map((row) => [row.outcome, number.format(row.runs), number.format(row.pricedRuns), `$${row.usd}`, `$${row.retryOverheadUsd}`]),
    ['total', number.format(report.outcomes.reduce((sum, row) => sum + row.runs, 0)), number.format(report.outcomes.reduce((sum, row) => sum + row.pricedRuns, 0)), `$${report.usd}`, `$${report.retryOverheadUsd}`],
  ])
  const notes: string[] = []
  if (report.unpricedRuns > 0) notes.push(`${number.format(report.unpricedRuns)} run${report.unpricedRuns === 1 ? '' : 's'} recorded without a cost (not priced: run with --prices) ${report.unpricedRuns === 1 ? 'is' : 'are'} not in these sums.`)
  const partlyPriced = report.outcomes.reduce((sum, row) => sum + row.runsWithUnpricedRequests, 0)
  if (partlyPriced > 0) notes.push(`${number.format(partlyPriced)} priced run${partlyPriced === 1 ? '' : 's'} also made requests to a model with no price, which these sums leave out.`)
  const tools =
    report.tools.length === 0
      ? 'No cannot_answer run was stopped by one tool alone.'
      : formatColumns([['Tool', 'Runs stopped', 'Lost'], ...report.tools.map((row) => [row.tool, number.format(row.runs), `$${row.usd}`])])
  const unattributed = report.unattributedLostUsd === '0.000000' ? [] : [`$${report.unattributedLostUsd} more went to cannot_answer runs no single tool stopped.`]
  return [outcomes, ...notes, '', tools, ...unattributed].join('\n')
}

function formatColumns(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? []
  // Names read left to right in the first column; figures line up on the right.
  return rows
    .map((row) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join('  '))
    .join('\n')
}
