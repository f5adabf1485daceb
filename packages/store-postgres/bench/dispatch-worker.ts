// A worker process of the dispatch benches; argv: <database url> <lease ms> <concurrency> [rate limits as JSON].
// Prints "ready" once it takes jobs; SIGTERM stops it cleanly.
import { startRunWorker } from '../src/index.js'
import { instantHost, ioWorkflow, keyedStepsWorkflow, slowWorkflow, stepsWorkflow, tenantWorkflow } from './dispatch-workflows.js'

const [url, leaseArg, concurrencyArg, rateLimitsArg] = process.argv.slice(2)
if (url === undefined || leaseArg === undefined || concurrencyArg === undefined) throw new Error('usage: dispatch-worker.ts <database url> <lease ms> <concurrency> [rate limits JSON]')
const worker = await startRunWorker({
  connectionString: url,
  workflows: [stepsWorkflow, slowWorkflow, ioWorkflow, tenantWorkflow, keyedStepsWorkflow],
  ...(rateLimitsArg === undefined ? {} : { rateLimits: JSON.parse(rateLimitsArg) as never }),
  host: instantHost(),
  leaseMs: Number(leaseArg),
  concurrency: Number(concurrencyArg),
})
process.once('SIGTERM', () => {
  void worker.stop().finally(() => process.exit(0))
})
process.stdout.write('ready\n')
