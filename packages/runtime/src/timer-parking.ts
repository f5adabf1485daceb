import { type RunRow, wakeAtOf } from '@locus/store'
import type { RunHandle, Runtime } from './create-runtime.js'

/** Options of {@link startTimerParking}. */
export interface TimerParkingOptions {
  /** How long a run must wait only on `sleep()` timers before it is parked. @default 1000 */
  readonly parkAfterMs?: number | undefined
  /**
   * How long before its due time a parked run is resumed, so that reading it
   * back from the store and claiming it happen before the timer is due, not
   * after (the resumed sleep waits for what is left); runs due together are
   * resumed earlier still, by what their resumes take one after another. A
   * run due sooner than this is not parked. @default 250
   */
  readonly wakeLeadMs?: number | undefined
  /** The wall clock that decides when a parked run is due. @default Date.now */
  readonly now?: (() => number) | undefined
  /** Called with each handle a wake-up resumed, so its owner can track it (a server lists and drains its runs). */
  readonly onResumed?: ((handle: RunHandle) => void) | undefined
  /** Called when a wake-up could not resume a run (it stays suspended; the next start of the process tries again). */
  readonly onError?: ((runId: string, error: unknown) => void) | undefined
}

/** Parks sleeping runs of one process and wakes them when their timer is due. */
export interface TimerParking {
  /** Watches a live run: once it has waited only on timers for `parkAfterMs`, it is suspended and woken at its due time. */
  watch(handle: RunHandle): void
  /** True when the row is a run this parking wakes later: suspended on a timer that is not due yet. */
  parksLater(row: RunRow): boolean
  /** Reads the store's summary rows once and schedules a wake-up for every run suspended on a timer (after a restart). */
  scan(): Promise<void>
  /** Runs parked and not woken yet, with their due time. */
  parked(): ReadonlyMap<string, number>
  /** Stops watching and cancels pending wake-ups (the runs stay suspended and resumable). */
  close(): void
}

/** setTimeout's longest delay; a longer sleep is re-armed when it fires. */
const MAX_DELAY_MS = 2 ** 31 - 1

/** True when every thing the row waits on is a `sleep()` timer: no deferral an answer could settle. */
function sleepsOnly(row: RunRow): boolean {
  return row.waitingOn.length > 0 && row.waitingOn.every((id) => Object.hasOwn(row.timers, id))
}

/**
 * A sleeping run that holds nothing: for a process on the file or memory store
 * (`locus serve`), what the PostgreSQL worker does with a job at `run_at`. A
 * run that waits only on `sleep()` timers for `parkAfterMs` is suspended (its
 * journal says so, its deferrals and timers unchanged); the store's summary
 * row keeps its timers, which is the index this reads after a restart; at the
 * earliest due time the run is resumed and the timer fires, late by the
 * wake-up's delay. A run that also waits on a deferral is never parked here:
 * an answer must find it live.
 */
export function startTimerParking(runtime: Runtime, options: TimerParkingOptions = {}): TimerParking {
  const parkAfterMs = options.parkAfterMs ?? 1000
  if (!Number.isSafeInteger(parkAfterMs) || parkAfterMs < 0) {
    throw new RangeError(`startTimerParking: parkAfterMs must be a whole number of milliseconds, 0 or more, not ${String(parkAfterMs)}.`)
  }
  const wakeLeadMs = options.wakeLeadMs ?? 250
  if (!Number.isSafeInteger(wakeLeadMs) || wakeLeadMs < 0) {
    throw new RangeError(`startTimerParking: wakeLeadMs must be a whole number of milliseconds, 0 or more, not ${String(wakeLeadMs)}.`)
  }
  const now = options.now ?? Date.now
  const wakeUps = new Map<string, { at: number; timer: NodeJS.Timeout }>()
  const unwatch = new Set<() => void>()
  let closed = false
  /**
   * What one wake-up's resume takes (a moving average, measured): runs due
   * together are resumed one after another's work, so the n-th of a burst
   * must start n resumes before its due time, not just `wakeLeadMs` before.
   */
  let resumeMs = 10
  /** Runs this parking woke for a timer not yet fired, by due time: they stay live until it fires, never parked again for it. */
  const wokenFor = new Map<string, number>()

  /** The wake lead of a run due at `at`: the fixed lead, plus the resumes of the parked runs due in the second before it. */
  function leadFor(at: number): number {
    let ahead = 0
    for (const wakeUp of wakeUps.values()) if (wakeUp.at <= at && wakeUp.at > at - 1000) ahead += 1
    return wakeLeadMs + ahead * resumeMs
  }

  function schedule(runId: string, at: number): void {
    if (closed) return
    clearTimeout(wakeUps.get(runId)?.timer)
    const delay = Math.min(MAX_DELAY_MS, Math.max(0, at - leadFor(at) - now()))
    const timer = setTimeout(() => {
      if (at - leadFor(at) > now()) {
        schedule(runId, at)
        return
      }
      wakeDue()
    }, delay)
    timer.unref()
    wakeUps.set(runId, { at, timer })
  }

  /**
   * Wakes every parked run that would be late if it waited longer: taken in
   * due order, the i-th is resumed now when its due time is within the lead
   * plus i resumes. Each wake-up timer that fires asks, so a burst of runs
   * due together is resumed spread over the time its resumes take.
   */
  function wakeDue(): void {
    if (closed) return
    const current = now()
    const due = [...wakeUps].sort((left, right) => left[1].at - right[1].at)
    for (const [index, [runId, wakeUp]] of due.entries()) {
      if (wakeUp.at - current > wakeLeadMs + (index + 1) * resumeMs) continue
      clearTimeout(wakeUp.timer)
      wakeUps.delete(runId)
      wokenFor.set(runId, wakeUp.at)
      void wake(runId)
    }
  }

  async function wake(runId: string): Promise<void> {
    if (closed || runtime.live(runId) !== undefined) return
    try {
      const startedAt = performance.now()
      const handle = await runtime.resume(runId)
      resumeMs = Math.min(50, resumeMs * 0.8 + (performance.now() - startedAt) * 0.2)
      options.onResumed?.(handle)
      watch(handle)
    } catch (error) {
      options.onError?.(runId, error)
    }
  }

  function watch(handle: RunHandle): void {
    if (closed) return
    let parkTimer: NodeJS.Timeout | undefined
    let parking = false
    const park = async (): Promise<void> => {
      handle.flush()
      const row = await runtime.store.readRunRow(handle.runId)
      const at = row === undefined ? undefined : wakeAtOf(row)
      // Only a run still waiting on timers alone, and only for long enough to be worth a suspend.
      if (closed || row === undefined || at === undefined || !sleepsOnly(row) || !handle.waitingOnly()) return
      // A run due within the wake lead would be resumed as soon as it was parked; one woken early for this timer stays.
      if (at - now() <= Math.max(parkAfterMs, wakeLeadMs) || wokenFor.get(handle.runId) === at) return
      parking = true
      handle.suspend(`parked while it sleeps until ${new Date(at).toISOString()}; this process wakes it then`)
      const result = await handle.done.catch(() => undefined)
      if (result?.suspended === true) schedule(handle.runId, at)
    }
    const onWaiting = (waitingOnly: boolean): void => {
      clearTimeout(parkTimer)
      parkTimer = undefined
      if (!waitingOnly || parking) return
      parkTimer = setTimeout(() => {
        void park().catch((error: unknown) => options.onError?.(handle.runId, error))
      }, parkAfterMs)
      parkTimer.unref()
    }
    const stop = handle.onWaitingChange(onWaiting)
    const forget = (): void => {
      stop()
      clearTimeout(parkTimer)
      unwatch.delete(forget)
      wokenFor.delete(handle.runId)
    }
    unwatch.add(forget)
    void handle.done.finally(forget).catch(() => undefined)
    if (handle.waitingOnly()) onWaiting(true)
  }

  function parksLater(row: RunRow): boolean {
    const at = wakeAtOf(row)
    return row.status === 'suspended' && at !== undefined && sleepsOnly(row) && at > now()
  }

  async function scan(): Promise<void> {
    let cursor: string | undefined
    do {
      const page = await runtime.list({ status: 'suspended', limit: 200, ...(cursor === undefined ? {} : { cursor }) })
      for (const row of page.rows) {
        const at = wakeAtOf(row)
        if (at !== undefined && sleepsOnly(row)) schedule(row.runId, at)
      }
      cursor = page.nextCursor
    } while (cursor !== undefined && !closed)
  }

  return {
    watch,
    parksLater,
    scan,
    parked: () => new Map([...wakeUps].map(([runId, wakeUp]) => [runId, wakeUp.at])),
    close() {
      closed = true
      for (const wakeUp of wakeUps.values()) clearTimeout(wakeUp.timer)
      wakeUps.clear()
      for (const forget of [...unwatch]) forget()
    },
  }
}
