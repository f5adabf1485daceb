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
