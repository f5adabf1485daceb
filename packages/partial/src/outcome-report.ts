import type { CostReport, DayReport, GapsReport, OutcomeReport, OutcomeStore } from './outcome-store.js'
import type { OutcomeStoreKind } from './partial-error.js'

/** Every figure of the outcome report over one window, as `locus report --json` prints it and the inspector's /report page draws it. */
export interface FullOutcomeReport {
  readonly type: 'report'
  /** Start of the window, exclusive, as an ISO 8601 instant. */
  readonly since: string
  readonly store: OutcomeStoreKind
  /** The seed's outcome query: runs per answer outcome, correctness where graded. */
  readonly outcomes: OutcomeReport
  /** The seed's gaps query: gaps per tool. */
  readonly gaps: GapsReport
  /** Dollars per answer outcome, lost to each tool's blocking gaps, and retry overhead. */
  readonly cost: CostReport
  /** Outcomes and dollars per UTC day, oldest first. */
  readonly days: readonly DayReport[]
}

/**
 * Reads the whole outcome report over the window after `since`: the seed's
 * two queries and the cost and daily ones beside them. One reading, so the
 * CLI and the inspector show the same figures.
 *
 * @example
 * ```ts
 * const report = await readOutcomeReport(store, new Date(Date.now() - 7 * 24 * 60 * 60 * 1000))
 * console.log(report.cost.usd, report.cost.retryOverheadUsd)
 * ```
 */
export async function readOutcomeReport(store: OutcomeStore, since: Date): Promise<FullOutcomeReport> {
  const outcomes = await store.outcomeReport({ since })
  const gaps = await store.gapsReport({ since })
  const cost = await store.costReport({ since })
  const daily = await store.dailyReport({ since })
  return { type: 'report', since: since.toISOString(), store: store.kind, outcomes, gaps, cost, days: daily.days }
}
