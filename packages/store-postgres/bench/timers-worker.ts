// A worker process of the timers bench (bench/timers.bench.ts): runs `napper` (one sleep(), then returns).
// argv: <database url> <lease ms> <concurrency> <park after ms>. Prints "ready" once it takes jobs; SIGTERM stops it
// cleanly (its live runs handed over), SIGKILL is the bench's crash.
import { defineWorkflow } from '@locus/runtime'
import { z } from 'zod'
import { startRunWorker } from '../src/index.js'

const [url, leaseArg, concurrencyArg, parkAfterArg] = process.argv.slice(2)
if (url === undefined || leaseArg === undefined || concurrencyArg === undefined || parkAfterArg === undefined) {
  throw new Error('usage: timers-worker.ts <database url> <lease ms> <concurrency> <park after ms>')
}

/** Sleeps `ms` and returns: parked by its worker after `parkAfterMs`, woken by its timer's job when due. */
const napper = defineWorkflow({
  name: 'napper',
  input: z.object({ ms: z.number().int().min(1) }),
  async run({ sleep, input }) {
    await sleep(input.ms)
    return { ok: true }
  },
})

const worker = await startRunWorker({
  connectionString: url,
  workflows: [napper],
  leaseMs: Number(leaseArg),
  concurrency: Number(concurrencyArg),
  parkAfterMs: Number(parkAfterArg),
})
process.once('SIGTERM', () => {
  void worker.stop().finally(() => process.exit(0))
})
process.stdout.write('ready\n')
