import type { RunRow } from '@locus/store'
import type { RunHandle, Runtime } from './create-runtime.js'
import { executionStanding } from './execution-standing.js'

/** How {@link drainRuns} ends the runs of a process that is stopping. */
export interface DrainOptions {
  /** How long runs that are working (not only waiting) may go on before they are cancelled. */
  readonly graceMs: number
  /** Written in the `log` line of a suspension and the `run_end` of a cancellation. */
  readonly reason: string
  /** Who the `run_cancel_requested` line of a cancellation names as asking (`server`, `cli`...). @default 'host' */
  readonly by?: string | undefined
  /** Starts the grace timer; injected by tests. @default setTimeout */
  readonly setTimer?: ((callback: () => void, ms: number) => { cancel(): void }) | undefined
}

/** How each drained run ended, by run id. */
export interface DrainReport {
  /** Waiting only on deferrals: no `run_end`, the deferrals still open under the same ids; a resume continues them. */
  readonly suspended: readonly string[]
  /** Still working when the grace period ran out: cancelled, with `run_end`. */
  readonly cancelled: readonly string[]
  /** Ended on their own during the grace period, with their own `run_end`. */
  readonly ended: readonly string[]
}

const realTimer = (callback: () => void, ms: number): { cancel(): void } => {
  const timer = setTimeout(callback, ms)
  return {
    cancel: () => {
      clearTimeout(timer)
    },
  }
}

/**
 * Ends the runs a stopping process executes, the same way in every process
 * that executes runs (`locus serve`, `locus mcp`): a run that waits only on
 * deferred tools is suspended at once (and so is one that comes to wait only
 * on them during the grace period), since an answer may take days and the
 * next process on the same store resumes it with its deferrals still open; a
 * run that is working gets `graceMs` to finish, then is cancelled with its
 * `run_end`. Resolves when every run has settled, saying how each ended.
 */
export async function drainRuns(handles: Iterable<RunHandle>, options: DrainOptions): Promise<DrainReport> {
  const runs = [...handles]
  const setTimer = options.setTimer ?? realTimer
  const unsubscribes: (() => void)[] = []
  for (const handle of runs) {
    if (handle.waitingOnly()) handle.suspend(options.reason)
    else {
      unsubscribes.push(
        handle.onWaitingChange((waitingOnly) => {
          if (waitingOnly) handle.suspend(options.reason)
        }),
      )
    }
  }
  const settled = Promise.allSettled(runs.map((handle) => handle.done))
  let graceOver: () => void = () => undefined
  const timer = setTimer(() => {
    graceOver()
  }, options.graceMs)
  const outcome = await Promise.race([
    settled.then(() => 'settled' as const),
    new Promise<'grace-over'>((resolve) => {
      graceOver = () => {
        resolve('grace-over')
      }
    }),
  ])
  timer.cancel()
  if (outcome === 'grace-over') for (const handle of runs) handle.cancel(options.reason, options.by)
  const results = await settled
  for (const unsubscribe of unsubscribes) unsubscribe()
  const report: { suspended: string[]; cancelled: string[]; ended: string[] } = { suspended: [], cancelled: [], ended: [] }
  results.forEach((result, index) => {
    const runId = runs[index]?.runId ?? ''
    if (result.status === 'fulfilled' && result.value.suspended === true) report.suspended.push(runId)
    else if (outcome === 'grace-over' && (result.status === 'rejected' || result.value.disposition === 'cancelled')) report.cancelled.push(runId)
    else report.ended.push(runId)
  })
  return report
}

/** What {@link resumeSuspendedRuns} did with each suspended run it found. */
export interface ResumeSuspendedReport {
  readonly resumed: readonly RunHandle[]
  /** Suspended runs it left alone, with why (a workflow this process does not serve, a run another process holds). */
  readonly skipped: readonly { readonly runId: string; readonly reason: string }[]
}

/**
 * Resumes every run of the runtime's store whose latest execution was
 * suspended (by {@link drainRuns} of a process that stopped), so its
 * deferrals wait again under the same ids and their deadlines run. A run of a
 * workflow this runtime does not have, or one another process holds, is
 * skipped and said so. Runs are read one at a time: the store is not loaded
 * all at once.
 */
export async function resumeSuspendedRuns(
  runtime: Runtime,
  options: { readonly signal?: AbortSignal | undefined; readonly skip?: ((row: RunRow) => boolean) | undefined } = {},
): Promise<ResumeSuspendedReport> {
  const resumed: RunHandle[] = []
  const skipped: { runId: string; reason: string }[] = []
  for await (const info of suspendedRows(runtime)) {
    if (options.signal?.aborted === true) break
    // A run parked on a timer not due yet is woken at its time (startTimerParking), not now.
    if (options.skip?.(info) === true) continue
    if (runtime.live(info.runId) !== undefined) continue
    let stored
    try {
      stored = await runtime.get(info.runId)
    } catch {
      // A run being created, or damaged: nothing to resume from here.
      continue
    }
    if (executionStanding(stored.latest) !== 'suspended') continue
    const workflow = stored.summary.workflow
    if (!runtime.workflows.has(workflow)) {
      skipped.push({ runId: info.runId, reason: `its workflow "${workflow}" is not served here` })
      continue
    }
    try {
      resumed.push(await runtime.resume(info.runId))
    } catch (error) {
      skipped.push({ runId: info.runId, reason: error instanceof Error ? error.message : String(error) })
    }
  }
  return { resumed, skipped }
}

/** Every run whose summary row says it is suspended, a page at a time (rows only; the journal decides below). */
async function* suspendedRows(runtime: Runtime): AsyncGenerator<RunRow> {
  let cursor: string | undefined
  do {
    const page = await runtime.list({ status: 'suspended', limit: 200, ...(cursor === undefined ? {} : { cursor }) })
    yield* page.rows
    cursor = page.nextCursor
  } while (cursor !== undefined)
}
