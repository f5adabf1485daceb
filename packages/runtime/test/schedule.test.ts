import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type ManualClock, createManualClock } from '@locus/retry'
import {
  type RunHandle,
  RuntimeInputError,
  type Scheduler,
  bindSchedules,
  createRuntime,
  defineSchedule,
  defineWorkflow,
  startScheduler,
} from '@locus/runtime'
import { type RunStore, type SlotRecord, createFileRunStore, createMemoryRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'

const START = Date.UTC(2026, 0, 1)
const slow = defineWorkflow({
  name: 'slow',
  input: z.object({ n: z.number() }),
  async run({ sleep }) {
    await sleep('2500ms')
    return { ok: true }
  },
})

const pause = (): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, 1)
  })

/** A runtime, scheduler and manual clock over one store; `step` moves the clock and lets everything settle. */
async function harness(store: RunStore, schedules: Parameters<typeof defineSchedule>[0][], clock: ManualClock = createManualClock(START)) {
  const runtime = createRuntime({ workflows: [slow], store, defaults: { clock } })
  const handles: RunHandle[] = []
  const ended = new Set<string>()
  const target = {
    async start(schedule: { workflow: string }, options: { runId: string; input: unknown }) {
      const handle = await runtime.start(schedule.workflow, { runId: options.runId, input: options.input })
      handles.push(handle)
      void handle.done.finally(() => ended.add(handle.runId))
      return handle
    },
    isRunning: (runId: string) => Promise.resolve(handles.some((handle) => handle.runId === runId) && !ended.has(runId)),
    cancel: (runId: string, reason: string) => Promise.resolve(runtime.cancel(runId, reason)),
  }
  const scheduler = await startScheduler({ schedules: schedules.map((options) => defineSchedule(options)), workflows: [slow], store, target, clock })
  /** Lets the runs and the scheduler go as far as they can without the clock. */
  async function settle(): Promise<void> {
    for (let round = 0; round < 5_000; round += 1) {
      await clock.flush()
      await scheduler.tick()
      if (handles.every((handle) => ended.has(handle.runId) || handle.waitingOnly())) return
      await pause()
    }
    throw new Error('the runs never settled')
  }
  async function step(ms: number, by = 100): Promise<void> {
    for (let moved = 0; moved < ms; moved += by) {
      await clock.advance(by)
      await settle()
    }
  }
  return { runtime, scheduler, clock, step, settle, handles }
}

const outcomes = (records: readonly SlotRecord[]): string[] =>
  [...records].reverse().map((record) => `${record.slot.slice(17, 19)} ${record.outcome}${record.runId === undefined ? '' : ` ${record.runId.slice(-6, -4)}`}`)

const base = { id: 'every-second', workflow: 'slow', every: '1s', input: { n: 1 }, overlap: 'skip', catchUpWindow: '3s' } as const

describe.each([
  ['memory', async () => ({ store: createMemoryRunStore(), cleanup: () => Promise.resolve() })],
  [
    'file',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'locus-schedule-'))
      return { store: createFileRunStore(join(dir, 'runs')), cleanup: () => rm(dir, { recursive: true, force: true }) }
    },
  ],
] as const)('schedules on the %s store', (_name, open) => {
  it('every 1s with overlap skip over a 2.5 s run records started and skipped-overlap for every slot of 10 s', async () => {
    const { store, cleanup } = await open()
    let scheduler: Scheduler | undefined
    try {
      const made = await harness(store, [base])
      scheduler = made.scheduler
      await made.step(10_000)
      const slots = await store.schedules!.listSlots('every-second')
      expect(outcomes(slots)).toEqual([
        '01 started 01',
        '02 skipped-overlap 01',
        '03 skipped-overlap 01',
        '04 started 04',
        '05 skipped-overlap 04',
        '06 skipped-overlap 04',
        '07 started 07',
        '08 skipped-overlap 07',
        '09 skipped-overlap 07',
        '10 started 10',
      ])
      expect(made.handles.map((handle) => handle.runId)).toEqual(slots.filter((slot) => slot.outcome === 'started').map((slot) => slot.runId).reverse())
    } finally {
      await scheduler?.stop()
      await cleanup()
    }
  })

  it('after a 5 s stop with a 3 s catch-up window, records the slots more than 3 s late missed and starts the rest', async () => {
    const { store, cleanup } = await open()
    const clock = createManualClock(START)
    try {
      const first = await harness(store, [{ ...base, overlap: 'allow' }], clock)
      await first.step(1_000)
      await first.scheduler.stop()
      await clock.advance(5_000)
      // A new process on the same store picks up where the slots stopped.
      const second = await harness(store, [{ ...base, overlap: 'allow' }], clock)
      await second.settle()
      const slots = await store.schedules!.listSlots('every-second')
      expect(slots.map((slot) => `${slot.slot.slice(17, 19)} ${slot.outcome}`).reverse()).toEqual([
        '01 started',
        '02 missed',
        '03 started',
        '04 started',
        '05 started',
        '06 started',
      ])
      expect(slots.find((slot) => slot.outcome === 'missed')?.error).toMatch(/catch-up window of 3s/)
      await second.scheduler.stop()
    } finally {
      await cleanup()
    }
  })

  it('records paused slots while paused, fires a trigger and backfill, and records failed-to-start with the error', async () => {
    const { store, cleanup } = await open()
    try {
      const made = await harness(store, [{ ...base, overlap: 'allow', paused: true }])
      await made.step(2_000)
      await store.schedules!.setPaused('every-second', false)
      await store.schedules!.requestSlots('every-second', [{ slot: new Date(START - 60_000).toISOString(), source: 'backfill' }])
      await made.step(1_000)
      // A run id that is taken: the slot's run cannot start.
      await store.createExecution({ runId: 'sched-every-second-20260101T000004000Z', kind: 'root' }).then((writer) => writer.close())
      await made.step(1_000)
      const slots = await store.schedules!.listSlots('every-second')
      expect(slots.map((slot) => `${slot.slot.slice(14, 19)} ${slot.outcome}${slot.source === undefined ? '' : ` ${slot.source}`}`).reverse()).toEqual([
        '59:00 started backfill',
        '00:01 paused',
        '00:02 paused',
        '00:03 started',
        '00:04 failed-to-start',
      ])
      expect(slots[0]?.error).toMatch(/exists already/)
      await made.scheduler.stop()
    } finally {
      await cleanup()
    }
  })
})

describe('overlap policies', () => {
  it('buffer-one starts the first slot behind a running run when it ends, skips the next, and records the one buffered at stop; cancel-other cancels it', async () => {
    const store = createMemoryRunStore()
    const made = await harness(store, [
      { ...base, id: 'buffered', overlap: 'buffer-one' },
      { ...base, id: 'cancelling', overlap: 'cancel-other' },
    ])
    await made.step(4_000)
    await made.scheduler.stop()
    const buffered = await store.schedules!.listSlots('buffered')
    expect(buffered.map((slot) => `${slot.slot.slice(17, 19)} ${slot.outcome}`).reverse()).toEqual(['01 started', '02 started', '03 skipped-overlap', '04 skipped-overlap'])
    const cancelling = await store.schedules!.listSlots('cancelling')
    expect(cancelling.map((slot) => `${slot.slot.slice(17, 19)} ${slot.outcome}`).reverse()).toEqual(['01 started', '02 started', '03 started', '04 started'])
    const ofCancelling = made.handles.filter((handle) => handle.runId.startsWith('sched-cancelling'))
    // Each slot cancelled the run before it; the last one is still sleeping.
    expect(ofCancelling[3]?.waitingOnly()).toBe(true)
    for (const handle of made.handles) made.runtime.cancel(handle.runId, 'test over')
    const cancelled = await Promise.all(ofCancelling.map((handle) => handle.done))
    expect(cancelled.map((result) => result.disposition)).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled'])
  })
})

describe('defineSchedule refuses bad input at definition', () => {
  const refused = (options: object, code: string, message: RegExp): void => {
    let caught: unknown
    try {
      defineSchedule({ ...base, ...(options as Partial<Parameters<typeof defineSchedule>[0]>) })
    } catch (error) {
      caught = error
    }
    expect(RuntimeInputError.isInstance(caught)).toBe(true)
    expect((caught as RuntimeInputError).code).toBe(code)
    expect((caught as Error).message).toMatch(message)
  }
  it('names the text and the form expected', () => {
    refused({ every: undefined, cron: '61 * * * *' }, 'SCHEDULE_INVALID', /"61 \* \* \* \*" is not a cron expression.*5 fields/)
    refused({ every: 'soon' }, 'SCHEDULE_INVALID', /"soon" is not a duration; pass one such as 500ms/)
    refused({ catchUpWindow: '3 weeks' }, 'SCHEDULE_INVALID', /"3 weeks" is not a duration/)
    refused({ every: undefined, cron: '0 9 * * *', timezone: 'Mars/Olympus' }, 'SCHEDULE_INVALID', /"Mars\/Olympus" is not a known time zone/)
    refused({ overlap: 'queue' }, 'SCHEDULE_INVALID', /"queue" is not an overlap policy/)
    refused({ cron: '* * * * *' }, 'SCHEDULE_INVALID', /exactly one of cron/)
    refused({ workflow: slow, input: { n: 'one' } }, 'WORKFLOW_INPUT_INVALID', /does not fit workflow "slow"/)
  })
  it('refuses an unknown workflow or a bad input when bound to the workflows, before any slot fires', async () => {
    expect(() => bindSchedules([defineSchedule({ ...base, workflow: 'nope' })], [slow])).toThrow(/names workflow "nope", which is not among the workflows it runs with \(slow\)/)
    await expect(
      startScheduler({ schedules: [defineSchedule({ ...base, input: { n: 'x' } })], workflows: [slow], store: createMemoryRunStore(), target: undefined, runtime: createRuntime({ workflows: [slow], store: createMemoryRunStore() }) }),
    ).rejects.toMatchObject({ code: 'WORKFLOW_INPUT_INVALID' })
  })
  it('reads cron in its time zone', () => {
    const paris = defineSchedule({ ...base, every: undefined, cron: '0 9 * * *', timezone: 'Europe/Paris' })
    expect(new Date(paris.nextSlot(START) ?? 0).toISOString()).toBe('2026-01-01T08:00:00.000Z')
    const seconds = defineSchedule({ ...base, every: undefined, cron: '*/15 * * * * *' })
    expect(new Date(seconds.nextSlot(START + 1) ?? 0).toISOString()).toBe('2026-01-01T00:00:15.000Z')
  })
})
