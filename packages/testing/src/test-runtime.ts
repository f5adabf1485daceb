import { performance } from 'node:perf_hooks'
import { type PendingSleep, type RetryClock, createManualClock } from '@locus/retry'
import {
  type AgentHost,
  DURATION_FORMS,
  type PendingDeferral,
  type RunHandle,
  type Runtime,
  type RuntimeOptions,
  type RuntimeRunOptions,
  RuntimeInputError,
  type ScheduleDefinition,
  type Scheduler,
  type WorkflowDefinition,
  createRuntime,
  durationMs,
  bindSchedules,
  startScheduler,
} from '@locus/runtime'
import { type ExecutionKind, type RunStore, createMemoryRunStore } from '@locus/store'
import { type CrashPoint, crashAt, crashingStore } from './crash-store.js'

/** Where the virtual clock starts unless told: a fixed instant, so runs are the same on every machine. */
export const TEST_CLOCK_START = Date.UTC(2026, 0, 1)

/** The one clock of a test runtime: it moves only when the test moves it. */
export interface TestClock extends RetryClock {
  /**
   * Moves the clock forward by a duration (`'500ms'`, `'30s'`, `'10m'`,
   * `'2h'`, `'7d'`) or a number of milliseconds, firing every timer due by
   * then in time order; after each one the runs go as far as they can before
   * the clock moves on.
   */
  advance(by: string | number): Promise<void>
  /** The timers waiting on the clock now (sleeps, deadlines, backoffs, expiries), earliest first. */
  pendingTimers(): readonly PendingSleep[]
}

/** What {@link createTestRuntime} needs. */
export interface TestRuntimeOptions {
  /** The workflows this runtime runs, by their names. */
  readonly workflows: RuntimeOptions['workflows']
  /**
   * Where `agent()` calls run. A function is given the runtime's clock, for a
   * host that waits on one: `(clock) => createScriptedHost({ clock, rules })`.
   */
  readonly host?: AgentHost | ((clock: TestClock) => AgentHost) | undefined
  /**
   * Schedules the runtime fires as its clock passes their slots
   * (`clock.advance`, `runUntilIdle`), each slot recorded in the store's
   * schedules. Checked against `workflows` when the runtime is created.
   */
  readonly schedules?: readonly ScheduleDefinition[] | undefined
  /** Where runs are kept. @default a fresh `createMemoryRunStore()` */
  readonly store?: RunStore | undefined
  /** The virtual clock's first reading. @default {@link TEST_CLOCK_START} (2026-01-01T00:00:00Z) */
  readonly startAt?: Date | number | undefined
  /** Options every run starts with, as `createRuntime`'s; the clock is the test runtime's. */
  readonly defaults?: Omit<NonNullable<RuntimeOptions['defaults']>, 'clock'> | undefined
  /**
   * How long (real milliseconds) a run that is neither waiting nor writing is
   * given before the runtime counts it as stuck and moves the clock on (a
   * tool awaiting real I/O, a retry backing off). @default 50
   */
  readonly quietMs?: number | undefined
}

/** Options of one start or resume of a test runtime. */
export type TestRunOptions = Omit<RuntimeRunOptions, 'clock'> & {
  /** Kills the execution at this call, as a SIGKILL would: see {@link crashAt}. */
  readonly crashAt?: CrashPoint | undefined
}

/** A run that cannot move without outside input. */
export interface WaitingRun {
  readonly runId: string
  readonly executionId: string
  /** The deferrals it waits on; answer them with `runtime.answerDeferred` or the handle. */
  readonly deferrals: readonly PendingDeferral[]
}

/** What {@link TestRuntime.runUntilIdle} found once nothing could move. */
export interface IdleReport {
  /** How far the clock moved, in milliseconds. */
  readonly advancedMs: number
  /** The clock's reading now. */
  readonly now: Date
  /** Every run of this runtime that has not ended, with what it waits on. */
  readonly waiting: readonly WaitingRun[]
}

/** A runtime on one virtual clock. */
export interface TestRuntime extends Omit<Runtime, 'start' | 'resume'> {
  readonly clock: TestClock
  /** As `Runtime.start`, on the virtual clock; with `crashAt`, the execution dies at that call. */
  start(workflow: WorkflowDefinition | string, options?: TestRunOptions): Promise<RunHandle>
  /** As `Runtime.resume`, on the virtual clock; with `crashAt`, the new execution dies at that call. */
  resume(runId: string, options?: TestRunOptions & { readonly workflow?: WorkflowDefinition | string }): Promise<RunHandle>
  /**
   * Fires every due timer, one after another, letting the runs move after
   * each, until no run of this runtime can move without outside input (an
   * answer to a deferral) and no timer is left; resolves what each run that
   * has not ended waits on. A deferral with a timeout expires on the way, as
   * it would. @throws RuntimeInputError (`RUN_OPTIONS_INVALID`) after
   * `maxWakeUps` timers, for a workflow that never stops sleeping
   */
  runUntilIdle(options?: { readonly maxWakeUps?: number }): Promise<IdleReport>
  /** The scheduler of `schedules`, once it registered them; undefined without schedules. */
  scheduler(): Promise<Scheduler | undefined>
  /** Stops the scheduler, recording a slot it held back. */
  close(): Promise<void>
}

interface Tracked {
  readonly handle: RunHandle
  ended: boolean
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))
const realPause = (): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, 1)
  })
/** setImmediate turns with nothing new before the runs count as settled. */
const QUIET_TURNS = 3

function advanceMs(by: string | number): number {
  const ms = typeof by === 'number' ? (Number.isFinite(by) && by >= 0 ? by : undefined) : durationMs(by)
  if (ms === undefined) {
    throw new RuntimeInputError(
      'RUN_OPTIONS_INVALID',
      `clock.advance(${typeof by === 'string' ? JSON.stringify(by) : String(by)}): not a duration; pass one such as ${DURATION_FORMS}, or a number of milliseconds (0 or more).`,
      [`advance: ${String(by)}`],
    )
  }
  return ms
}

/**
 * Creates a runtime whose one virtual clock drives every sleep, run deadline,
 * call timeout, retry backoff and deferral expiry (on the memory store unless
 * given another): `runtime.clock.advance('7d')` moves it, and
 * `runtime.runUntilIdle()` moves it through every due timer. Nothing sleeps
 * for real.
 *
 * @example
 * ```ts
 * const runtime = createTestRuntime({ workflows: [reminder] })
 * const run = await runtime.start('reminder', { input: {} })
 * await runtime.runUntilIdle()
 * console.log((await run.done).disposition)
 * ```
 */
export function createTestRuntime(options: TestRuntimeOptions): TestRuntime {
  const startAt = options.startAt instanceof Date ? options.startAt.getTime() : (options.startAt ?? TEST_CLOCK_START)
  const quietMs = options.quietMs ?? 50
  const manual = createManualClock(startAt)
  const baseStore = options.store ?? createMemoryRunStore()
  const crashing = crashingStore(baseStore, () => manual.now())
  const tracked = new Map<string, Tracked>()
  let endedCount = 0
  let crashIds = 0

  function track(handle: RunHandle): RunHandle {
    const entry: Tracked = { handle, ended: false }
    tracked.set(handle.runId, entry)
    const ended = (): void => {
      entry.ended = true
      endedCount += 1
    }
    handle.done.then(ended, ended)
    return handle
  }

  const progress = (): string => `${crashing.linesWritten()}|${manual.pendingSleeps().length}|${endedCount}`
  const everyRunWaits = (): boolean => [...tracked.values()].every((entry) => entry.ended || entry.handle.waitingOnly())

  /**
   * Lets every run go as far as it can without the clock: until nothing new
   * is written for a few turns and every run waits (on the clock or an
   * answer), or a busy run stayed silent for `quietMs`.
   */
  async function settle(): Promise<void> {
    let last = progress()
    let quietTurns = 0
    let quietSince = performance.now()
    for (;;) {
      await nextTurn()
      const now = progress()
      if (now !== last) {
        last = now
        quietTurns = 0
        quietSince = performance.now()
        continue
      }
      quietTurns += 1
      if (quietTurns < QUIET_TURNS) continue
      if (everyRunWaits() || performance.now() - quietSince >= quietMs) return
      await realPause()
    }
  }

  async function fireNext(): Promise<boolean> {
    const next = manual.pendingSleeps()[0]
    if (next === undefined) return false
    await manual.advance(Math.max(0, next.wakeAt - manual.now()))
    return true
  }

  const clock: TestClock = {
    now: () => manual.now(),
    sleep: (ms, signal) => manual.sleep(ms, signal),
    pendingTimers: () => manual.pendingSleeps(),
    async advance(by) {
      const target = manual.now() + advanceMs(by)
      const scheduler = await schedulerReady
      await settle()
      for (;;) {
        const timer = manual.pendingSleeps()[0]?.wakeAt
        const slot = scheduler?.nextDueAt()
        const next = Math.min(timer ?? Number.POSITIVE_INFINITY, slot ?? Number.POSITIVE_INFINITY)
        if (next > target) break
        await manual.advance(Math.max(0, next - manual.now()))
        if (scheduler !== undefined && slot !== undefined && slot <= manual.now()) await scheduler.tick()
        await settle()
      }
      await manual.advance(target - manual.now())
      await scheduler?.tick()
      await settle()
    },
  }

  const host = typeof options.host === 'function' ? options.host(clock) : options.host
  const inner = createRuntime({
    workflows: options.workflows,
    ...(host === undefined ? {} : { host }),
    store: crashing.store,
    defaults: { ...options.defaults, clock: manual },
  })
  // Bound to the workflows now, so a bad schedule throws here; the virtual clock drives it (no loop of its own).
  const workflowList = Array.isArray(options.workflows) ? (options.workflows as readonly WorkflowDefinition[]) : Object.values(options.workflows as Record<string, WorkflowDefinition>)
  const schedules = options.schedules === undefined || options.schedules.length === 0 ? undefined : bindSchedules(options.schedules, workflowList)
  let schedulerReady: Promise<Scheduler | undefined> = Promise.resolve(undefined)

  /** Arms a crash for the next `kind` execution of the run; the id is chosen here when the test gave none. */
  async function armCrash(point: CrashPoint, kind: ExecutionKind, runId: string | undefined): Promise<string> {
    let id = runId
    while (id === undefined || (kind === 'root' && runId === undefined && (await crashing.store.hasRun(id)))) id = `crash-run-${++crashIds}`
    const chosen = id
    crashing.plan(chosen, kind, crashAt(point), () => {
      // The process is gone: the execution stops here, and its writes were already cut off at the crash line.
      inner.live(chosen)?.suspend('killed by crashAt')
    })
    return chosen
  }

  const scheduled = {
    start: (workflow: WorkflowDefinition | string, startOptions?: TestRunOptions) => wrapped.start(workflow, startOptions),
    live: (runId: string) => inner.live(runId),
    get: (...args: Parameters<typeof inner.get>) => inner.get(...args),
    cancel: (...args: Parameters<typeof inner.cancel>) => inner.cancel(...args),
  }
  if (schedules !== undefined) {
    if (baseStore.schedules === undefined) {
      throw new RuntimeInputError('RUN_OPTIONS_INVALID', `createTestRuntime: the ${baseStore.kind} store keeps no schedules; use a memory or file store.`, ['store: no schedules'])
    }
    schedulerReady = startScheduler({ schedules, store: baseStore.schedules, runtime: scheduled, clock: manual, loop: false })
    // Rejected here too, so an unawaited failure is not unhandled; the test sees it at advance().
    schedulerReady.catch(() => undefined)
  }

  const wrapped: TestRuntime = {
    ...inner,
    clock,
    scheduler: () => schedulerReady,
    async close() {
      await (await schedulerReady)?.stop()
    },
    async start(workflow, startOptions) {
      const { crashAt: point, ...rest } = startOptions ?? {}
      const runOptions = point === undefined ? rest : { ...rest, runId: await armCrash(point, 'root', rest.runId) }
      return track(await inner.start(workflow, runOptions))
    },
    async resume(runId, resumeOptions) {
      const { crashAt: point, ...rest } = resumeOptions ?? {}
      if (point !== undefined) await armCrash(point, 'resume', runId)
      return track(await inner.resume(runId, rest))
    },
    async runUntilIdle(idleOptions) {
      const maxWakeUps = idleOptions?.maxWakeUps ?? 10_000
      const from = manual.now()
      for (let wakeUps = 0; ; wakeUps += 1) {
        await settle()
        if (manual.pendingSleeps().length === 0) break
        if (wakeUps >= maxWakeUps) {
          throw new RuntimeInputError(
            'RUN_OPTIONS_INVALID',
            `runUntilIdle: timers were still due after ${maxWakeUps} wake-ups; raise maxWakeUps, or look for a workflow that never stops sleeping.`,
            [`maxWakeUps: ${maxWakeUps}`],
          )
        }
        await fireNext()
      }
      const waiting: WaitingRun[] = []
      for (const [runId, entry] of tracked) {
        if (entry.ended) continue
        waiting.push({ runId, executionId: entry.handle.executionId, deferrals: await inner.pendingDeferrals(runId) })
      }
      return { advancedMs: manual.now() - from, now: new Date(manual.now()), waiting }
    },
  }
  return wrapped
}
