// Helpers shared by the tests: deterministic delays (microtask turns, never
// timers), hand-settled promises and an event-collecting run scope.
import { type GroupEvent, type RunScopeOptions, createRunScope, runInScope } from '../src/index.js'

/** Waits `count` microtask turns: a delay that depends on nothing but order. */
export async function ticks(count: number): Promise<void> {
  for (let turn = 0; turn < count; turn += 1) await Promise.resolve()
}

/** Lets every queued microtask (and the ones they queue, up to a bound) run. */
export async function drain(): Promise<void> {
  await ticks(200)
}

export interface Deferred<T> {
  readonly promise: Promise<T>
  resolve(value: T): void
  reject(reason: unknown): void
  settled: boolean
}

/** A promise settled by hand, so a test decides exactly when a branch ends. */
export function deferred<T = unknown>(): Deferred<T> {
  let resolve!: (value: T) => void
  let reject!: (reason: unknown) => void
  const promise = new Promise<T>((onResolve, onReject) => {
    resolve = onResolve
    reject = onReject
  })
  const handle: Deferred<T> = {
    promise,
    settled: false,
    resolve(value) {
      handle.settled = true
      resolve(value)
    },
    reject(reason) {
      handle.settled = true
      reject(reason)
    },
  }
  return handle
}

/** Runs `fn` in a fresh run scope that records every group event. */
export async function inRecordedScope<T>(
  fn: (events: readonly GroupEvent[]) => Promise<T>,
  options: Omit<RunScopeOptions, 'observer'> = {},
): Promise<{ result: PromiseSettledResult<T>; events: GroupEvent[] }> {
  const events: GroupEvent[] = []
  const scope = createRunScope({ ...options, observer: (event) => events.push(event) })
  const [result] = await Promise.allSettled([runInScope(scope, () => fn(events))])
  return { result: result as PromiseSettledResult<T>, events }
}

/** The rejection reason of a promise that must reject. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected the promise to reject, but it fulfilled')
}
