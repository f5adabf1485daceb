/**
 * What a worker knows, locally, about one run's lease: when the last heartbeat
 * that succeeded was sent, and whether the lease was lost. A heartbeat sets
 * the expiry to the database's clock at that moment plus the lease, and the
 * database ran the statement after it was sent, so while less than a lease has
 * passed since the send (by this process's clock) the lease cannot have
 * lapsed, and nobody can have taken the run over.
 */
export interface LeaseGuard {
  /** A heartbeat sent at `sentAt` (by the guard's clock) extended the lease. */
  renewed(sentAt: number): void
  /** The lease is gone (a heartbeat or a fenced commit found another epoch): every wait rejects with `error`. */
  lost(error: Error): void
  /**
   * Undefined while the lease is live by the local reckoning, so a dispatch
   * may go ahead at once; otherwise a promise that resolves at the next
   * renewal and rejects once the lease is lost. Never waits on the network.
   */
  whenLive(): Promise<void> | undefined
  /** True once {@link lost} was called. */
  readonly isLost: boolean
}

/** A {@link LeaseGuard} for a lease taken by a request sent at `takenAt`; `now` is a monotonic clock in milliseconds. */
export function createLeaseGuard(options: { readonly runId: string; readonly epoch: number; readonly leaseMs: number; readonly takenAt: number; readonly now: () => number }): LeaseGuard {
  let lastSentAt = options.takenAt
  let lostError: Error | undefined
  const waiters = new Set<{ resolve: () => void; reject: (error: Error) => void }>()
  return {
    renewed(sentAt) {
      if (lostError !== undefined) return
      lastSentAt = Math.max(lastSentAt, sentAt)
      if (options.now() - lastSentAt >= options.leaseMs) return
      for (const waiter of waiters) waiter.resolve()
      waiters.clear()
    },
    lost(error) {
      lostError ??= error
      for (const waiter of waiters) waiter.reject(lostError)
      waiters.clear()
    },
    whenLive() {
      if (lostError !== undefined) return Promise.reject(lostError)
      if (options.now() - lastSentAt < options.leaseMs) return undefined
      return new Promise<void>((resolve, reject) => {
        waiters.add({ resolve, reject })
      })
    },
    get isLost() {
      return lostError !== undefined
    },
  }
}

