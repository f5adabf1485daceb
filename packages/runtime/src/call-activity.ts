/**
 * What a run's calls are doing now, counted as they start and settle: how
 * many agent and tool calls are in flight, and how many of those are deferred
 * tools waiting for their answer. A root run and the children it spawns share
 * one, so a run only waits when every call anywhere in it waits. O(1) per
 * change; the listener hears only when "waiting only" flips.
 */
export class CallActivity {
  private active = 0
  private waiting = 0
  private last = false

  constructor(private readonly onChange: (waitingOnly: boolean) => void = () => undefined) {}

  /** True when at least one call is in flight and every call in flight is a deferral waiting for its answer. */
  get waitingOnly(): boolean {
    return this.active > 0 && this.waiting >= this.active
  }

  /** Counts `call` in flight from now until it settles. */
  track<T>(call: () => Promise<T>): Promise<T> {
    this.active += 1
    this.changed()
    let running: Promise<T>
    try {
      running = call()
    } catch (error) {
      this.active -= 1
      this.changed()
      throw error
    }
    return running.finally(() => {
      this.active -= 1
      this.changed()
    })
  }

  /** A tracked deferred tool call begins waiting for its answer; the returned function ends the wait. */
  beginWait(): () => void {
    this.waiting += 1
    this.changed()
    let ended = false
    return () => {
      if (ended) return
      ended = true
      this.waiting -= 1
      this.changed()
    }
  }

  private changed(): void {
    const now = this.waitingOnly
    if (now === this.last) return
    this.last = now
    this.onChange(now)
  }
}
