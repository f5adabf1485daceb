import { createHash } from 'node:crypto'
import { type RetryClock, systemClock } from '@locus/retry'
import type { RunStore, ScheduleStore, SlotRecord, SlotSource } from '@locus/store'
import type { Runtime } from './create-runtime.js'
import type { WorkflowDefinition } from './define.js'
import { RuntimeInputError } from './errors.js'
import { type ScheduleDefinition, bindSchedules } from './schedule.js'

/** How a scheduler starts, watches and cancels the runs of its slots. */
export interface ScheduleTarget {
  /** Starts the slot's run under `runId`; what it throws is recorded as `failed-to-start`. */
  start(schedule: ScheduleDefinition, options: { readonly runId: string; readonly input: unknown }): Promise<unknown>
  /** True while the run has not ended (on any process sharing the store). */
  isRunning(runId: string): Promise<boolean>
  /** Cancels a run (for `overlap: 'cancel-other'`). */
  cancel(runId: string, reason: string): Promise<unknown>
}

/** What {@link startScheduler} needs. */
export interface StartSchedulerOptions {
  readonly schedules: readonly ScheduleDefinition[]
  /** Where slot records and paused states are kept: a run store with schedules, or its `schedules`. */
  readonly store: RunStore | ScheduleStore
  /** The runtime whose `start` runs each slot; or give `target`. */
  readonly runtime?: Pick<Runtime, 'start' | 'live' | 'get' | 'cancel' | 'requestCancel'> | undefined
  /** How runs are started and watched, instead of `runtime`. */
  readonly target?: ScheduleTarget | undefined
  /**
   * The workflows the schedules run against: each schedule's workflow and
   * input are checked against them before the first slot. Pass them unless
   * the schedules were bound already with `bindSchedules`.
   */
  readonly workflows?: Iterable<WorkflowDefinition> | undefined
  /** The clock slots are computed and waited on; tests inject a manual one. @default the system clock */
  readonly clock?: RetryClock | undefined
  /** How often pause, unpause, trigger and backfill requests are looked for, in milliseconds. @default 1000 */
  readonly pollMs?: number | undefined
  /** Told about a tick that failed (an unreachable store); the scheduler goes on at the next tick. */
  readonly onError?: ((error: unknown) => void) | undefined
  /**
   * False: no loop of its own; the caller calls `tick()` when the clock
   * passes `nextDueAt()` (the test kit's virtual clock does). @default true
   */
  readonly loop?: boolean | undefined
  /** Told about each slot record this scheduler wrote. */
  readonly onSlot?: ((scheduleId: string, record: SlotRecord) => void) | undefined
}

/** A running scheduler. */
export interface Scheduler {
  readonly schedules: readonly ScheduleDefinition[]
  /** Looks at every schedule now and records what is due; the loop calls it, and tests may. */
  tick(): Promise<void>
  /** When the next slot of any schedule is due (its jitter included), by the clock; undefined when none will come. */
  nextDueAt(): number | undefined
  /** Stops the loop after the tick under way; a slot buffered behind a running run is recorded `skipped-overlap`. */
  stop(): Promise<void>
}

/** Most slots one schedule records in one tick (an outage of a fast schedule is recorded over several ticks). */
const MAX_SLOTS_PER_TICK = 10_000

const isScheduleStore = (store: RunStore | ScheduleStore): store is ScheduleStore => 'claimSlot' in store

/** The run id a slot starts: the same in every process, so a run id names its slot. */
export function scheduleRunId(scheduleId: string, slotMs: number): string {
  return `sched-${scheduleId}-${new Date(slotMs).toISOString().replaceAll(/[-:.]/g, '')}`
}

/** The slot's jitter: a delay below `jitterMs` that every process computes alike from the schedule and slot. */
export function slotJitterMs(scheduleId: string, slotMs: number, jitterMs: number): number {
  if (jitterMs <= 0) return 0
  const digest = createHash('sha256').update(`${scheduleId}\n${slotMs}`).digest()
  return digest.readUInt32BE(0) % jitterMs
}

/** A target over a runtime: runs start with `runtime.start`, and are running while their journal has no end. */
export function runtimeScheduleTarget(runtime: NonNullable<StartSchedulerOptions['runtime']>): ScheduleTarget {
  return {
    start: (schedule, options) => runtime.start(schedule.workflow, { input: options.input, runId: options.runId }),
    async isRunning(runId) {
      if (runtime.live(runId) !== undefined) return true
      try {
        return (await runtime.get(runId)).summary.standing === 'unfinished'
      } catch {
        return false
      }
    },
    async cancel(runId, reason) {
      if (runtime.cancel(runId, reason, 'scheduler')) return true
      return runtime.requestCancel?.(runId, reason, 'scheduler')
    },
  }
}

interface ScheduleLoop {
  readonly schedule: ScheduleDefinition
  /** The newest slot of the schedule's own clock this scheduler has dealt with. */
  cursor: number | undefined
  /** A slot waiting for the running run to end (`overlap: 'buffer-one'`). */
  buffered: { readonly slot: number; readonly source: SlotSource } | undefined
}

/**
 * Fires schedules: on each tick, every slot that fell due since the last one
 * is recorded once in the store (claimed exclusively, so of several
 * schedulers sharing a store one writes each slot): `started` with its run
 * id, `skipped-overlap` over a run still going (`overlap: 'skip'`, or a
 * second slot behind a buffered one), `missed` when older than the catch-up
 * window, `paused` while paused, or `failed-to-start` with the error.
 * Requests from `locus schedule trigger` and `backfill` are fired too. The
 * loop waits on `clock`, so a manual clock drives it in tests.
 *
 * @throws RuntimeInputError when a schedule names an unknown workflow or its input fails the workflow's schema
 * @example
 * ```ts
 * const scheduler = await startScheduler({ schedules, workflows, runtime, store })
 * // ...
 * await scheduler.stop()
 * ```
 */
export async function startScheduler(options: StartSchedulerOptions): Promise<Scheduler> {
  const schedules = options.workflows === undefined ? options.schedules : bindSchedules(options.schedules, options.workflows)
  const found = isScheduleStore(options.store) ? options.store : options.store.schedules
  if (found === undefined) {
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `startScheduler: the ${(options.store as RunStore).kind} store keeps no schedules; use a file, memory or PostgreSQL store.`, [
      'store: no schedules',
    ])
  }
  const store: ScheduleStore = found
  const chosen = options.target ?? (options.runtime === undefined ? undefined : runtimeScheduleTarget(options.runtime))
  if (chosen === undefined) throw new RuntimeInputError('RUN_OPTIONS_INVALID', 'startScheduler: pass the runtime whose runs the schedules start (or a target).', ['runtime: missing'])
  const target: ScheduleTarget = chosen
  const clock = options.clock ?? systemClock
  const pollMs = options.pollMs ?? 1000
  if (!Number.isFinite(pollMs) || pollMs <= 0) throw new RuntimeInputError('RUN_OPTIONS_INVALID', `startScheduler: pollMs must be above 0, not ${String(pollMs)}.`, [`pollMs: ${String(pollMs)}`])

  const loops: ScheduleLoop[] = []
  for (const schedule of schedules) {
    await store.registerSchedule(schedule.stored(), clock.now())
    loops.push({ schedule, cursor: undefined, buffered: undefined })
  }

  const iso = (ms: number): string => new Date(ms).toISOString()
  async function record(loop: ScheduleLoop, record: Omit<SlotRecord, 'recordedAt'>): Promise<boolean> {
    const full: SlotRecord = { ...record, recordedAt: iso(clock.now()) }
    const claimed = await store.claimSlot(loop.schedule.id, full)
    if (claimed) options.onSlot?.(loop.schedule.id, full)
    return claimed
  }
  const sourced = (source: SlotSource): { source?: SlotSource } => (source === 'schedule' ? {} : { source })

  /** The run the newest slots started or skipped over: the one an overlap policy looks at. */
  async function previousRun(loop: ScheduleLoop): Promise<string | undefined> {
    // The slot written last, not the newest slot: a buffered slot starts after newer ones were recorded.
    const recent = (await store.listSlots(loop.schedule.id, { limit: 20 })).sort((a, b) => (a.recordedAt < b.recordedAt ? 1 : a.recordedAt > b.recordedAt ? -1 : 0))
    return recent.find((slot) => slot.runId !== undefined && (slot.outcome === 'started' || slot.outcome === 'skipped-overlap'))?.runId
  }

  async function start(loop: ScheduleLoop, slot: number, source: SlotSource): Promise<void> {
    const runId = scheduleRunId(loop.schedule.id, slot)
    if (!(await record(loop, { slot: iso(slot), outcome: 'started', runId, ...sourced(source) }))) return
    try {
      await target.start(loop.schedule, { runId, input: loop.schedule.input })
    } catch (error) {
      const failed: SlotRecord = { slot: iso(slot), outcome: 'failed-to-start', error: error instanceof Error ? error.message : String(error), ...sourced(source), recordedAt: iso(clock.now()) }
      await store.updateSlot(loop.schedule.id, failed)
      options.onSlot?.(loop.schedule.id, failed)
    }
  }

  /** A slot that may start now: the overlap policy decides. */
  async function fire(loop: ScheduleLoop, slot: number, source: SlotSource): Promise<void> {
    // Another scheduler recorded it already: nothing to decide.
    if ((await store.readSlot(loop.schedule.id, iso(slot))) !== undefined) return
    const policy = loop.schedule.overlap
    if (policy === 'allow') return start(loop, slot, source)
    const previous = await previousRun(loop)
    const running = previous !== undefined && (await target.isRunning(previous))
    if (!running) return start(loop, slot, source)
    if (policy === 'skip') {
      await record(loop, { slot: iso(slot), outcome: 'skipped-overlap', runId: previous, ...sourced(source) })
      return
    }
    if (policy === 'cancel-other') {
      await target.cancel(previous, `schedule ${loop.schedule.id}: slot ${iso(slot)} replaces this run (overlap: cancel-other)`)
      return start(loop, slot, source)
    }
    // buffer-one: the first slot waits for the run to end; one behind it is skipped.
    if (loop.buffered === undefined) {
      loop.buffered = { slot, source }
      return
    }
    await record(loop, { slot: iso(slot), outcome: 'skipped-overlap', runId: previous, error: `slot ${iso(loop.buffered.slot)} is buffered already`, ...sourced(source) })
  }

  async function tickOne(loop: ScheduleLoop, now: number): Promise<void> {
    const { schedule } = loop
    const state = await store.readSchedule(schedule.id)
    const paused = state?.paused ?? schedule.paused
    // A buffered slot starts once the run it waited on has ended.
    if (loop.buffered !== undefined) {
      const previous = await previousRun(loop)
      if (previous === undefined || !(await target.isRunning(previous))) {
        const buffered = loop.buffered
        loop.buffered = undefined
        await start(loop, buffered.slot, buffered.source)
      }
    }
    for (const request of await store.takeRequests(schedule.id)) {
      const slot = Date.parse(request.slot)
      if (paused && request.source === 'backfill') await record(loop, { slot: request.slot, outcome: 'paused', source: request.source })
      else await fire(loop, slot, request.source)
    }
    if (loop.cursor === undefined) {
      const last = await store.lastScheduledSlot(schedule.id)
      const registered = state === undefined ? now : Date.parse(state.registeredAt)
      loop.cursor = last === undefined ? registered : Math.max(Date.parse(last.slot), registered)
    } else {
      // Another scheduler may have gone further.
      const last = await store.lastScheduledSlot(schedule.id)
      if (last !== undefined) loop.cursor = Math.max(loop.cursor, Date.parse(last.slot))
    }
    for (let count = 0; count < MAX_SLOTS_PER_TICK; count += 1) {
      const slot = schedule.nextSlot(loop.cursor)
      if (slot === undefined || slot + slotJitterMs(schedule.id, slot, schedule.jitterMs) > now) break
      if (now - slot > schedule.catchUpWindowMs) {
        await record(loop, { slot: iso(slot), outcome: 'missed', error: `${now - slot} ms late, past the catch-up window of ${schedule.catchUpWindow}` })
      } else if (paused) {
        await record(loop, { slot: iso(slot), outcome: 'paused' })
      } else {
        await fire(loop, slot, 'schedule')
      }
      loop.cursor = slot
    }
  }

  let stopped = false
  const stopper = new AbortController()
  let ticking: Promise<void> = Promise.resolve()
  async function tick(): Promise<void> {
    const now = clock.now()
    for (const loop of loops) {
      try {
        await tickOne(loop, now)
      } catch (error) {
        options.onError?.(error)
      }
    }
  }
  /** When the loop looks next: the earliest due slot, or the poll. */
  const startedAt = clock.now()
  function nextDueAt(): number | undefined {
    let due: number | undefined
    for (const loop of loops) {
      const slot = loop.schedule.nextSlot(loop.cursor ?? startedAt)
      if (slot !== undefined) due = Math.min(due ?? Number.POSITIVE_INFINITY, slot + slotJitterMs(loop.schedule.id, slot, loop.schedule.jitterMs))
    }
    return due
  }
  function nextWake(): number {
    const now = clock.now()
    return Math.max(Math.min(now + pollMs, nextDueAt() ?? Number.POSITIVE_INFINITY), now)
  }
  async function run(): Promise<void> {
    if (options.loop === false) return
    while (!stopped) {
      ticking = tick()
      await ticking
      const wait = nextWake() - clock.now()
      if (wait > 0) await clock.sleep(wait, stopper.signal)
    }
  }
  const loop = run()
  return {
    schedules,
    nextDueAt,
    tick: () => (ticking = ticking.then(tick)),
    async stop() {
      stopped = true
      stopper.abort()
      await loop
      await ticking
      for (const one of loops) {
        if (one.buffered === undefined) continue
        const buffered = one.buffered
        one.buffered = undefined
        await record(one, { slot: iso(buffered.slot), outcome: 'skipped-overlap', error: 'the scheduler stopped while the slot waited for the running run', ...sourced(buffered.source) })
      }
    },
  }
}
