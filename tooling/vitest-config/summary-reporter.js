/**
 * Prints one plain closing line, `tests: N passed, N failed, N skipped`, that
 * CI reads regardless of which runner produced it.
 *
 * @implements {import('vitest/node').Reporter}
 */
export default class SummaryReporter {
  /**
   * @param {ReadonlyArray<import('vitest/node').TestModule>} testModules
   * @param {ReadonlyArray<unknown>} unhandledErrors
   */
  onTestRunEnd(testModules, unhandledErrors) {
    let passed = 0
    let failed = 0
    let skipped = 0
    for (const testModule of testModules) {
      for (const testCase of testModule.children.allTests()) {
        const state = testCase.result().state
        if (state === 'passed') passed += 1
        else if (state === 'failed') failed += 1
        else skipped += 1
      }
      // A module that failed to load has no test cases but is still a failure.
      if (testModule.state() === 'failed' && testModule.children.size === 0) failed += 1
    }
    failed += unhandledErrors.length
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`)
  }
}
