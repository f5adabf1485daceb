/**
 * What one run of a workload produced, counted the same way for every system
 * so that their results can be compared before their timings are.
 */

/** One item that did not make it through, and the stage where it stopped (0 for single-stage work). */
export interface ItemFailure {
  readonly index: number
  readonly stage: number
}

/** The outcome of one run of one implementation of a workload. */
export interface Tally {
  /** Items (or calls) that ended with a value. */
  readonly succeeded: number
  /** Items that ended without one. */
  readonly failed: number
  /** Extra physical attempts, as the system itself reports them where it can. */
  readonly retries: number
  /** The sum of the successful values, so that every system is seen to return the same values. */
  readonly checksum: number
  /** Which items failed and at which stage, sorted by index. */
  readonly failures: readonly ItemFailure[]
}

/** Sorts failures by item index so that tallies compare regardless of settlement order. */
export function sortFailures(failures: Iterable<ItemFailure>): ItemFailure[] {
  return [...failures].sort((left, right) => left.index - right.index || left.stage - right.stage)
}

/**
 * Lists every way `actual` differs from `expected`, one sentence each; an
 * empty list means the two agree.
 */
export function tallyDifferences(expected: Tally, actual: Tally): string[] {
  const differences: string[] = []
  for (const field of ['succeeded', 'failed', 'retries', 'checksum'] as const) {
    if (expected[field] !== actual[field]) differences.push(`${field}: expected ${expected[field]}, got ${actual[field]}`)
  }
  const describe = (failures: readonly ItemFailure[]): string => failures.map((failure) => `#${failure.index}@${failure.stage}`).join(' ')
  const expectedFailures = describe(expected.failures)
  const actualFailures = describe(actual.failures)
  if (expectedFailures !== actualFailures) {
    differences.push(`failures by item@stage: expected [${expectedFailures}], got [${actualFailures}]`)
  }
  return differences
}
