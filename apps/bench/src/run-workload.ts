/**
 * Runs one workload for the comparison: every implementation once for the
 * agreement check, then interleaved timed rounds through @locus/bench-kit,
 * then one run each for peak heap.
 */
import { type BenchResult, measure } from '@locus/bench-kit'
import { type AgreementRow, checkAgreement } from './check-agreement.js'
import { measurePeakHeap } from './heap-probe.js'
import { type SystemName, type Workload, isMeasured } from './workload.js'

/** One row of a workload's table. */
export interface ResultRow {
  readonly system: SystemName
  readonly name: string
  readonly note?: string
  /** Median nanoseconds per item; absent for a row that was not measured. */
  readonly nsPerItem?: number
  /** Peak heap above a collected baseline, in bytes; NaN without `--expose-gc`. */
  readonly peakHeapBytes?: number
  /** This row's median divided by the Locus row's. */
  readonly ratioToLocus?: number
  /** Why the row has no figures. */
  readonly notMeasured?: string
  readonly agreement?: AgreementRow
}

/** Everything measured for one workload. */
export interface WorkloadResult {
  readonly workload: Workload
  readonly rows: readonly ResultRow[]
  readonly rounds: number
  readonly warmupRounds: number
  /** True when every measured implementation reported the expected tally. */
  readonly agreed: boolean
  readonly setupMs: number
}

export interface RunWorkloadOptions {
  readonly rounds: number
  readonly warmupRounds: number
  /** Called with progress lines. */
  readonly log?: (line: string) => void
}

/** Runs, checks and times one workload, and always tears it down. */
export async function runWorkload(workload: Workload, options: RunWorkloadOptions): Promise<WorkloadResult> {
  const log = options.log ?? (() => undefined)
  const setupStarted = performance.now()
  try {
    await workload.setup?.()
    const setupMs = performance.now() - setupStarted
    log(`${workload.id}: setup ${(setupMs / 1000).toFixed(1)} s; checking that every system agrees`)
    const agreement = await checkAgreement(workload)
    const agreed = agreement.every((row) => row.differences.length === 0)
    for (const row of agreement) {
      if (row.differences.length > 0) log(`${workload.id}: ${row.name} DISAGREES: ${row.differences.join('; ')}`)
    }

    const measured = workload.implementations.filter(isMeasured)
    log(`${workload.id}: timing ${measured.length} implementations, ${options.warmupRounds} warm-up + ${options.rounds} rounds`)
    const timings: BenchResult[] = await measure(
      measured.map((implementation) => ({ name: implementation.name, operations: workload.items, run: implementation.run })),
      { rounds: options.rounds, warmupRounds: options.warmupRounds },
    )
    const peakHeap = new Map<string, number>()
    for (const implementation of measured) peakHeap.set(implementation.name, await measurePeakHeap(implementation.run))

    const locusNs = timings.find((timing) => timing.name === workload.locusName)?.nsPerOp ?? Number.NaN
    const rows: ResultRow[] = workload.implementations.map((implementation) => {
      if (!isMeasured(implementation)) return { system: implementation.system, name: implementation.name, notMeasured: implementation.reason }
      const nsPerItem = timings.find((timing) => timing.name === implementation.name)?.nsPerOp ?? Number.NaN
      const agreementRow = agreement.find((row) => row.name === implementation.name)
      return {
        system: implementation.system,
        name: implementation.name,
        ...(implementation.note === undefined ? {} : { note: implementation.note }),
        nsPerItem,
        peakHeapBytes: peakHeap.get(implementation.name) ?? Number.NaN,
        ratioToLocus: nsPerItem / locusNs,
        ...(agreementRow === undefined ? {} : { agreement: agreementRow }),
      }
    })
    return { workload, rows, rounds: options.rounds, warmupRounds: options.warmupRounds, agreed, setupMs }
  } finally {
    workload.teardown?.()
  }
}
