// Who asked for a cancel travels beside the abort signal, not in its reason:
// the reason becomes the cause of the errors a cancel ends calls with, and a
// journal keeps those as they always were.
const requesters = new WeakMap<AbortSignal, string>()

/**
 * Aborts `controller` with `reason`, noting that `by` asked (the first note
 * stays): a run whose `signal` this is journals
 * `run_cancel_requested { reason, by }`, as `handle.cancel(reason, by)` does.
 *
 * @example
 * ```ts
 * const controller = new AbortController()
 * const handle = await runtime.resume(runId, { signal: controller.signal })
 * process.once('SIGINT', () => abortAs(controller, 'interrupted', 'cli'))
 * ```
 */
export function abortAs(controller: AbortController, reason: string, by: string | undefined): void {
  if (!controller.signal.aborted && by !== undefined && by !== '') requesters.set(controller.signal, by)
  controller.abort(reason)
}

/** Copies who asked from one aborted signal to the one it aborts next. */
export function forwardRequester(from: AbortSignal, to: AbortSignal): void {
  const by = requesters.get(from)
  if (by !== undefined && !requesters.has(to)) requesters.set(to, by)
}

/** Who asked for the abort of `signal`, when a cancel said so. */
export function requesterOf(signal: AbortSignal): string | undefined {
  return requesters.get(signal)
}
