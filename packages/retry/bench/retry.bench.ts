// What runWithRetry adds around an operation that succeeds at once, next to
// calling the same operation directly, measured in the same run.
import { measure, printTable, reportTarget } from '@locus/bench-kit'
import { type RetryPolicy, runWithRetry } from '@locus/retry'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const calls = smoke ? 1_000 : 100_000

const noTimeout: RetryPolicy = { timeout_secs: null, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 60 }
const withTimeout: RetryPolicy = { ...noTimeout, timeout_secs: 30 }
const callerSignal = new AbortController().signal
const operation = async (): Promise<number> => 1
const syncOperation = (): number => 1

let sink = 0
const results = await measure(
  [
    {
      name: 'await operation() directly',
      operations: calls,
      run: async () => {
        for (let index = 0; index < calls; index += 1) sink += await operation()
      },
    },
    {
      name: 'runWithRetry, no timeout',
      operations: calls,
      run: async () => {
        for (let index = 0; index < calls; index += 1) {
          const outcome = await runWithRetry(operation, noTimeout)
          if (outcome.ok) sink += outcome.value
        }
      },
    },
    {
      name: 'runWithRetry, sync operation',
      operations: calls,
      run: async () => {
        for (let index = 0; index < calls; index += 1) {
          const outcome = await runWithRetry(syncOperation, noTimeout)
          if (outcome.ok) sink += outcome.value
        }
      },
    },
    {
      name: 'runWithRetry, caller signal',
      operations: calls,
      run: async () => {
        for (let index = 0; index < calls; index += 1) {
          const outcome = await runWithRetry(operation, noTimeout, { signal: callerSignal })
          if (outcome.ok) sink += outcome.value
        }
      },
    },
    {
      name: 'runWithRetry, 30 s timeout',
      operations: calls,
      run: async () => {
        for (let index = 0; index < calls; index += 1) {
          const outcome = await runWithRetry(operation, withTimeout)
          if (outcome.ok) sink += outcome.value
        }
      },
    },
  ],
  { rounds: smoke ? 1 : 9, warmupRounds: smoke ? 0 : 2 },
)
const baselineName = 'await operation() directly'
printTable(`@locus/retry: runWithRetry around an operation that succeeds at once (${calls} calls)`, results, baselineName)
const baseline = results.find((result) => result.name === baselineName)?.nsPerOp ?? Number.NaN
for (const result of results) {
  if (result.name === baselineName) continue
  reportTarget(`added cost per call, ${result.name}`, result.nsPerOp - baseline, 1_000, ' ns')
}
if (sink < 0) console.log(sink)
