/**
 * Peak heap of one run: the highest `used_heap_size` seen while the run is in
 * flight, minus the heap left after a forced collection just before it. It is
 * sampled every 32nd call of the shared work functions (which call
 * {@link heapTick}), every few milliseconds by a timer, and once when the run
 * has settled but its result is still held. The probe costs one boolean test
 * per call when no peak is being measured, the same for every system.
 */
import { getHeapStatistics } from 'node:v8'

const SAMPLE_EVERY_CALLS = 32
const SAMPLE_EVERY_MS = 5

let active = false
let calls = 0
let peak = 0

function sample(): void {
  const used = getHeapStatistics().used_heap_size
  if (used > peak) peak = used
}

/** Called by the work functions of every workload; samples the heap while a peak is being measured. */
export function heapTick(): void {
  if (!active) return
  calls += 1
  if (calls % SAMPLE_EVERY_CALLS === 0) sample()
}

/** True when the process was started with `--expose-gc`, which peak heap needs for a clean baseline. */
export function canMeasureHeap(): boolean {
  return typeof (globalThis as { gc?: unknown }).gc === 'function'
}

/**
 * Runs `run` once and returns the peak heap it reached above a collected
 * baseline, in bytes, or `NaN` when the process has no `--expose-gc`.
 */
export async function measurePeakHeap(run: () => Promise<unknown>): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) {
    await run()
    return Number.NaN
  }
  gc()
  const baseline = getHeapStatistics().used_heap_size
  peak = baseline
  calls = 0
  active = true
  const timer = setInterval(sample, SAMPLE_EVERY_MS)
  try {
    const result = await run()
    sample()
    // Keep the result alive until it has been sampled with the rest of the run.
    if (result === Symbol.for('never')) sample()
  } finally {
    active = false
    clearInterval(timer)
  }
  return peak - baseline
}
