/**
 * `pnpm bench:compare`: runs every workload for every system in this one
 * process, checks that they agree, times them, evaluates the targets, prints
 * the tables and writes docs/benchmarks.md. With LOCUS_BENCH_SMOKE=1 it runs
 * at 1% size with one round and only prints.
 */
import { setMaxListeners } from 'node:events'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { printTable } from '@locus/bench-kit'
import { canMeasureHeap } from './heap-probe.js'
import { describeMachine, packageVersions } from './machine.js'
import { formatMeasure, renderReport } from './render-report.js'
import { type WorkloadResult, runWorkload } from './run-workload.js'
import { fullSizes, smokeSizes } from './sizes.js'
import { evaluateTargets } from './targets.js'
import { createWorkloads } from './workloads/index.js'

// LangGraph adds one abort listener per task in flight to a shared signal;
// at concurrency 16 Node would warn about a leak that is not one.
setMaxListeners(64)

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
/** `LOCUS_BENCH_ONLY=resume,fan-out` runs only those workloads and, like a smoke run, writes nothing. */
const only = (process.env.LOCUS_BENCH_ONLY ?? '').split(',').map((id) => id.trim()).filter((id) => id.length > 0)
const reportPath = fileURLToPath(new URL('../../../docs/benchmarks.md', import.meta.url))
/** Rounds per workload: the slow LangGraph rows of the journaled workload set its budget. */
const ROUNDS: Readonly<Record<string, { rounds: number; warmupRounds: number }>> = {
  'fan-out': { rounds: 5, warmupRounds: 1 },
  'journaled-calls': { rounds: 3, warmupRounds: 0 },
  pipeline: { rounds: 5, warmupRounds: 1 },
  resume: { rounds: 5, warmupRounds: 0 },
}

const started = performance.now()
const machine = describeMachine()
const sizes = smoke ? smokeSizes() : fullSizes()
console.log(`bench:compare${smoke ? ' (smoke: 1% size, one round, nothing written)' : ''} on ${machine.cpuModel} × ${machine.cpuCount}, Node ${machine.node}`)
if (!canMeasureHeap()) console.log('no --expose-gc: peak heap will read n/a')

const results: WorkloadResult[] = []
const workloads = createWorkloads(sizes, smoke ? 'smoke' : 'full')
const unknown = only.filter((id) => !workloads.some((workload) => workload.id === id))
if (unknown.length > 0) {
  throw new Error(`LOCUS_BENCH_ONLY names no workload "${unknown.join('", "')}"; the workloads are ${workloads.map((workload) => workload.id).join(', ')}.`)
}
for (const workload of workloads.filter((candidate) => only.length === 0 || only.includes(candidate.id))) {
  const rounds = smoke ? { rounds: 1, warmupRounds: 0 } : (ROUNDS[workload.id] ?? { rounds: 3, warmupRounds: 1 })
  const result = await runWorkload(workload, { ...rounds, log: (line) => { console.log(line) } })
  results.push(result)
  const timed = result.rows.flatMap((row) => (row.nsPerItem === undefined ? [] : [{ name: row.name, nsPerOp: row.nsPerItem, rounds: result.rounds }]))
  printTable(`${workload.title} (per ${workload.unit})`, timed, workload.locusName)
  for (const row of result.rows) {
    if (row.notMeasured !== undefined) console.log(`${row.name}: ${row.notMeasured}`)
    else console.log(`  peak heap ${row.name}: ${((row.peakHeapBytes ?? Number.NaN) / 1024 / 1024).toFixed(1)} MB`)
  }
  if (workload.footnote !== undefined) console.log(workload.footnote)
}

const targets = evaluateTargets(results)
console.log('')
for (const target of targets) {
  const verdict = target.met === undefined ? 'context' : target.met ? 'met   ' : 'MISSED'
  const goal = target.limit === undefined ? '' : ` (target ${target.comparison === 'at-most' ? '<=' : '>='} ${target.limit}${target.metric === 'peak-heap-mib' ? ' MiB' : 'x'})`
  console.log(`target ${verdict} ${target.label}: ${formatMeasure(target)}${goal}`)
}

const disagreeing = results.filter((result) => !result.agreed).map((result) => result.workload.id)
const totalSeconds = (performance.now() - started) / 1000
if (smoke || only.length > 0) {
  console.log(`\n${smoke ? 'smoke' : `partial (${only.join(', ')})`} run done in ${totalSeconds.toFixed(1)} s; docs/benchmarks.md left as it was`)
} else {
  // Figures of other benchmarks (the server's load test) are recorded by hand below this marker; they are kept.
  const marker = '<!-- Recorded by hand from other benchmarks; the generator keeps everything below this line. -->'
  const previous = existsSync(reportPath) ? readFileSync(reportPath, 'utf8') : ''
  const kept = previous.includes(marker) ? `\n${previous.slice(previous.indexOf(marker))}` : ''
  writeFileSync(reportPath, renderReport({ generatedAt: new Date(), machine, versions: packageVersions(), results, targets, totalSeconds }) + kept)
  console.log(`\nwrote ${reportPath} after ${(totalSeconds / 60).toFixed(1)} minutes`)
}
if (disagreeing.length > 0) {
  console.error(`systems disagree on: ${disagreeing.join(', ')}`)
  process.exitCode = 1
}
