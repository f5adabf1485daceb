/**
 * A small harness for package benchmarks. Every figure it prints is measured
 * in the same process run as its baseline, so ratios stay meaningful on a
 * shared, noisy two-core machine where absolute numbers do not.
 */

export interface BenchCase {
  /** Shown in the table. */
  readonly name: string
  /** Runs the measured work once per call; `operations` says how many items it covers. */
  readonly run: () => unknown
  /** Items one `run()` processes, so the table can print a per-item cost. @default 1 */
  readonly operations?: number
}

export interface BenchResult {
  readonly name: string
  /** Median nanoseconds per item over the measured rounds. */
  readonly nsPerOp: number
  readonly rounds: number
}

export interface MeasureOptions {
  /** Rounds discarded before measuring. @default 2 */
  readonly warmupRounds?: number
  /** Rounds measured; the median is reported. @default 7 */
  readonly rounds?: number
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right)
  const middle = Math.floor(sorted.length / 2)
  const upper = sorted[middle] ?? Number.NaN
  return sorted.length % 2 === 1 ? upper : ((sorted[middle - 1] ?? Number.NaN) + upper) / 2
}

/**
 * Measures each case in interleaved rounds (A, B, A, B, ...) so that a burst of
 * background load hits every case alike, and reports the median per item.
 */
export async function measure(cases: readonly BenchCase[], options: MeasureOptions = {}): Promise<BenchResult[]> {
  const warmupRounds = options.warmupRounds ?? 2
  const rounds = options.rounds ?? 7
  const samples = cases.map((benchCase) => ({ benchCase, perItem: [] as number[] }))
  for (let round = 0; round < warmupRounds + rounds; round += 1) {
    for (const { benchCase, perItem } of samples) {
      const started = process.hrtime.bigint()
      await benchCase.run()
      const elapsed = Number(process.hrtime.bigint() - started)
      if (round >= warmupRounds) perItem.push(elapsed / (benchCase.operations ?? 1))
    }
  }
  return samples.map(({ benchCase, perItem }) => ({ name: benchCase.name, nsPerOp: median(perItem), rounds }))
}

function formatNs(ns: number): string {
  if (ns >= 1e9) return `${(ns / 1e9).toFixed(2)} s`
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`
  if (ns >= 1e3) return `${(ns / 1e3).toFixed(2)} µs`
  return `${ns.toFixed(1)} ns`
}

/**
 * Prints a table of results with each row's ratio to the named baseline row,
 * and returns the ratios so a script can compare them with its targets.
 */
export function printTable(title: string, results: readonly BenchResult[], baselineName: string): Map<string, number> {
  const baseline = results.find((result) => result.name === baselineName)
  if (baseline === undefined) throw new Error(`bench-kit: baseline "${baselineName}" is not among the results`)
  const ratios = new Map<string, number>()
  const nameWidth = Math.max(...results.map((result) => result.name.length), 4)
  console.log(`\n${title}`)
  console.log(`${'case'.padEnd(nameWidth)}  ${'per item'.padStart(12)}  ${'vs ' + baselineName}`)
  for (const result of results) {
    const ratio = result.nsPerOp / baseline.nsPerOp
    ratios.set(result.name, ratio)
    console.log(`${result.name.padEnd(nameWidth)}  ${formatNs(result.nsPerOp).padStart(12)}  ${ratio.toFixed(2)}x`)
  }
  return ratios
}

/** Prints whether a measured figure met its target; never throws, benchmarks report rather than gate. */
export function reportTarget(label: string, measured: number, target: number, unit = 'x'): boolean {
  const met = measured <= target
  console.log(`target ${met ? 'met   ' : 'MISSED'} ${label}: ${measured.toFixed(2)}${unit} (target <= ${target}${unit})`)
  return met
}

/** Runs `build` with a forced GC before and after and returns retained heap bytes. Needs `--expose-gc`. */
export async function retainedHeapBytes(build: () => unknown): Promise<{ bytes: number; keep: unknown }> {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error('bench-kit: run with node --expose-gc to measure heap')
  gc()
  const before = process.memoryUsage().heapUsed
  const keep = await build()
  gc()
  const after = process.memoryUsage().heapUsed
  return { bytes: after - before, keep }
}

export { formatNs }
