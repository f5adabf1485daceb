import type { Reporter } from 'vitest/node'

export default class SummaryReporter implements Reporter {
  onTestRunEnd: NonNullable<Reporter['onTestRunEnd']>
}
