export { TEST_CLOCK_START, createTestRuntime } from './test-runtime.js'
export type { IdleReport, TestClock, TestRunOptions, TestRuntime, TestRuntimeOptions, WaitingRun } from './test-runtime.js'
export { crashAt } from './crash-store.js'
export type { CrashPoint } from './crash-store.js'
