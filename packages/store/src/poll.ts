/** Waits `ms`, or less when the signal aborts; never rejects. A waiting tail keeps the process alive, as any awaited read would. */
export function pollUntil(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted === true) return Promise.resolve()
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })
}

/** Runs `body` now and gives its value, or what it threw, as a promise. */
export function settle<T>(body: () => T): Promise<T> {
  return new Promise<T>((resolve) => { resolve(body()); })
}
