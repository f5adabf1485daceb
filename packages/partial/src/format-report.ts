import type { GapsReport, OutcomeReport } from './outcome-store.js'

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

function formatColumns(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? []
  // Names read left to right in the first column; figures line up on the right.
  return rows
    .map((row) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join('  '))
    .join('\n')
}
