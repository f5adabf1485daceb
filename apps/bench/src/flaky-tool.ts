/**
 * The work every system is given: an instant asynchronous tool call that
 * returns a small object, where chosen items fail once with an error marked
 * retryable (the seed-001 failure shape: `retryable`, `code`) and succeed on
 * the retry.
 */
import { heapTick } from './heap-probe.js'

/** A failure the retry policies of every system are told to retry. */
export class FlakyToolError extends Error {
  readonly retryable = true
  readonly code = 'flaky_once'

  constructor(index: number) {
    super(`tool call for item ${index} failed once on purpose (retryable)`)
    this.name = 'FlakyToolError'
  }
}

/** True for a failure that a policy may retry: the error says so itself. */
export function isRetryable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { retryable?: unknown }).retryable === true
}

/** What the tool returns for one item. */
export interface ToolValue {
  readonly index: number
  readonly value: number
}

/** The value item `index` returns, so that expected checksums can be computed without running anything. */
export function toolValueOf(index: number): number {
  return index * 2 + 1
}

/** Items whose first attempt fails: every `failEvery`-th, starting at 0. */
export function failsOnce(index: number, failEvery: number): boolean {
  return index % failEvery === 0
}

/** A fresh tool for one run: it remembers which items have already failed once. */
export interface FlakyTool {
  readonly call: (index: number) => Promise<ToolValue>
  /** Physical calls made, retries included. */
  readonly calls: () => number
}

/** Makes the tool for one run over `count` items, one in `failEvery` failing once. */
export function createFlakyTool(count: number, failEvery: number): FlakyTool {
  const failedBefore = new Uint8Array(count)
  let calls = 0
  const call = (index: number): Promise<ToolValue> => {
    calls += 1
    heapTick()
    if (failsOnce(index, failEvery) && failedBefore[index] === 0) {
      failedBefore[index] = 1
      return Promise.reject(new FlakyToolError(index))
    }
    return Promise.resolve({ index, value: toolValueOf(index) })
  }
  return { call, calls: () => calls }
}
