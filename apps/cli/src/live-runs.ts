/**
 * The runs this process is executing right now, each with a way to cancel it.
 *
 * While one is live the process is held open. A run can be waiting on
 * nothing Node counts as pending work: a host turn that only an abort ends, a
 * deferred tool, a promise a workflow awaits. Without a handle of its own,
 * Node would then find its event loop empty and end the process under the run
 * (exit 13, an unsettled top-level await) with no `run_end` and no
 * `result.json`. The hold is one ref'd timer for the whole process, released
 * when the last live run settles.
 */
const live = new Set<(reason: string) => void>()
let keepAlive: ReturnType<typeof setInterval> | undefined

/** Long enough never to fire in practice; short enough for a 32-bit timer. */
const KEEP_ALIVE_INTERVAL_MS = 2 ** 30

/**
 * Marks a run live until the returned function is called: the process stays
 * alive meanwhile, and {@link cancelLiveRuns} reaches it. Call the returned
 * function once the run has settled (it may be called more than once).
 *
 * @example
 * ```ts
 * const release = holdLiveRun((reason) => handle.cancel(reason))
 * try {
 *   await handle.done
 * } finally {
 *   release()
 * }
 * ```
 */
export function holdLiveRun(cancel: (reason: string) => void): () => void {
  const entry = (reason: string): void => {
    cancel(reason)
  }
  live.add(entry)
  keepAlive ??= setInterval(() => undefined, KEEP_ALIVE_INTERVAL_MS)
  return () => {
    live.delete(entry)
    if (live.size === 0 && keepAlive !== undefined) {
      clearInterval(keepAlive)
      keepAlive = undefined
    }
  }
}

/**
 * Cancels every live run the way the first Ctrl-C does, so each still ends
 * with its `run_end`; returns how many there were. The process then ends on
 * its own once they have settled.
 */
export function cancelLiveRuns(reason: string): number {
  const running = [...live]
  for (const cancel of running) cancel(reason)
  return running.length
}
