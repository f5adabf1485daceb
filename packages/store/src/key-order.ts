/**
 * Runs asynchronous writes of one key one after another, in the order they
 * were issued, while writes of different keys still overlap. A store whose
 * writes can land out of order (a rename race on disk, two pool connections)
 * wraps its artifact writes in this so that the last write issued is the one
 * a reader sees.
 */
export function writesInIssueOrder(): <T>(key: string, write: () => Promise<T>) => Promise<T> {
  const tails = new Map<string, Promise<unknown>>()
  return <T>(key: string, write: () => Promise<T>): Promise<T> => {
    const before = tails.get(key) ?? Promise.resolve()
    // A failed write does not stop the next one: each write answers for itself.
    const mine = before.then(write, write)
    const tail = mine.then(
      () => undefined,
      () => undefined,
    )
    tails.set(key, tail)
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key)
    })
    return mine
  }
}

/**
 * Runs at most `limit` asynchronous writes at once, the rest waiting their
 * turn in the order they were issued. A file store's writes each hold open
 * file descriptors, and a fast run can issue thousands in one burst (every
 * call's envelope, transcript and result); unbounded, they reach the
 * process's limit of open files (EMFILE) and the run fails on its records.
 */
export function boundedWrites(limit: number): <T>(write: () => Promise<T>) => Promise<T> {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`boundedWrites: the limit is a whole number of at least 1, not ${String(limit)}.`)
  let inFlight = 0
  const waiting: (() => void)[] = []
  return async <T>(write: () => Promise<T>): Promise<T> => {
    // A slot freed while others wait is handed to the first of them, so the count only falls when nobody waits.
    if (inFlight < limit) inFlight += 1
    else await new Promise<void>((resolve) => waiting.push(resolve))
    try {
      return await write()
    } finally {
      const next = waiting.shift()
      if (next === undefined) inFlight -= 1
      else next()
    }
  }
}
