// Run by check-deploy.bench.ts in its own process with --expose-gc: the peak
// heap of one checkDeploy over the runs directory given as the first argument,
// sampled every few milliseconds above a collected baseline (as
// apps/bench/src/heap-probe.ts does), printed as one JSON line.
import { getHeapStatistics } from 'node:v8'
import { checkDeploy } from '@locus/runtime'
import workflow from './check-deploy-workflow.js'

const runsDir = process.argv[2]
if (runsDir === undefined) throw new Error('usage: check-deploy-heap-worker.ts <runsDir>')
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error('run with node --expose-gc')

gc()
const baseline = getHeapStatistics().used_heap_size
let peak = baseline
const sample = (): void => {
  peak = Math.max(peak, getHeapStatistics().used_heap_size)
}
const timer = setInterval(sample, 5)
const started = performance.now()
const report = await checkDeploy({ runsDir, workflows: [workflow] })
const elapsedMs = performance.now() - started
sample()
clearInterval(timer)
console.log(JSON.stringify({ peakBytes: peak - baseline, runs: report.runs.length, identical: report.runs.filter((run) => run.verdict === 'identical').length, elapsedMs }))
