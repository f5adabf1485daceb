// A worker process of the dispatch bench; argv: <database url> <lease ms> <concurrency>.
// Prints "ready" once it takes jobs; SIGTERM stops it cleanly.
import { startRunWorker } from '../src/index.js'
import { instantHost, slowWorkflow, stepsWorkflow } from './dispatch-workflows.js'

const [url, leaseArg, concurrencyArg] = process.argv.slice(2)
if (url === undefined || leaseArg === undefined || concurrencyArg === undefined) throw new Error('usage: dispatch-worker.ts <database url> <lease ms> <concurrency>')
const worker = await startRunWorker({
  connectionString: url,
  workflows: [stepsWorkflow, slowWorkflow],
  host: instantHost(),
  leaseMs: Number(leaseArg),
  concurrency: Number(concurrencyArg),
})
process.once('SIGTERM', () => {
  void worker.stop().finally(() => process.exit(0))
})
process.stdout.write('ready\n')
