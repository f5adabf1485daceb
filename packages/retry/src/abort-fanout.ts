/**
 * Abort listeners for signals that many calls listen on at once (a run's
 * signal under a wide fan-out): one real `abort` listener per signal, which
 * calls a set of callbacks. Node's EventTarget walks its whole listener list
 * on every `addEventListener` and `removeEventListener`, so ten thousand calls
 * each listening on one signal cost time quadratic in their number; a set
 * adds and removes in constant time.
 */
const fanouts = new WeakMap<AbortSignal, Set<() => void>>()

/**
 * Calls `callback` once when `signal` aborts (not when it has aborted
 * already: check `signal.aborted` first). A callback that throws does not
 * stop the others; its error is reported as an uncaught exception, as an
 * EventTarget listener's would be.
 */
export function onAbort(signal: AbortSignal, callback: () => void): void {
  let callbacks = fanouts.get(signal)
  if (callbacks === undefined) {
    const created = new Set<() => void>()
    callbacks = created
    fanouts.set(signal, created)
    signal.addEventListener(
      'abort',
      () => {
        fanouts.delete(signal)
        for (const run of created) {
          try {
            run()
          } catch (error) {
            queueMicrotask(() => {
              throw error
            })
          }
        }
      },
      { once: true },
    )
  }
  callbacks.add(callback)
}

/** Forgets a callback given to {@link onAbort}; harmless when it was never added or has run. */
export function offAbort(signal: AbortSignal, callback: () => void): void {
  fanouts.get(signal)?.delete(callback)
}
