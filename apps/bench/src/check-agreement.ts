import { type Tally, tallyDifferences } from './tally.js'
import { type Workload, isMeasured } from './workload.js'

/** What one implementation reported, and how it differs from what was expected. */
export interface AgreementRow {
  readonly name: string
  readonly tally: Tally
  /** Empty when the implementation agrees with the expected tally. */
  readonly differences: readonly string[]
}

/**
 * Runs every measured implementation of a workload once and compares what it
 * reports with the expected tally. Runs them one after another, so a failure
 * names its row. Does not call `setup` or `teardown`.
 */
export async function checkAgreement(workload: Workload): Promise<AgreementRow[]> {
  const rows: AgreementRow[] = []
  for (const implementation of workload.implementations) {
    if (!isMeasured(implementation)) continue
    const tally = await implementation.run()
    rows.push({ name: implementation.name, tally, differences: tallyDifferences(workload.expected, tally) })
  }
  return rows
}
