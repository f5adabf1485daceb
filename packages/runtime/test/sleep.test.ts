import { join } from 'node:path'
import { type JournalLine, readJournal } from '@locus/journal'
import { type ManualClock, createManualClock } from '@locus/retry'
import {
  RuntimeInputError,
  checkDeploy,
  type RunResult,
  type SleepFor,
  defineTool,
  defineWorkflow,
  readStoredRun,
  replayRun,
  sleepDueAt,
  createRuntime,
  startWorkflowRun,
} from '@locus/runtime'
import { createFileRunStore } from '@locus/store'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { linesOfType, tempRunsDir } from './helpers.js'

const START = Date.parse('2026-03-01T00:00:00.000Z')

/**
 * Lets the run reach its sleep: flushes until the clock has a sleeper. Bounded by real time, not by rounds: on a
 * loaded machine the store's file reads can outlast thousands of event-loop turns.
 */
async function untilSleeping(clock: ManualClock): Promise<void> {
  const giveUpAt = Date.now() + 30_000
  while (clock.pendingSleeps().length === 0 && Date.now() < giveUpAt) await clock.flush()
  if (clock.pendingSleeps().length === 0) throw new Error('the run never started sleeping')
}

function journalOf(result: Pick<RunResult, 'executionDir'>): JournalLine[] {
  return readJournal(join(result.executionDir, 'journal.jsonl')).lines
}

/** Two tool calls 2 s apart; each counts its own runs. */
function twoStepWorkflow(nap = '2s'): { workflow: ReturnType<typeof defineWorkflow>; ran: { first: number; second: number } } {
  const ran = { first: 0, second: 0 }
  const workflow = defineWorkflow({
    name: 'two-steps',
    tools: {
      first: defineTool({ input: z.object({}), run: () => ({ n: ++ran.first }) }),
      second: defineTool({ input: z.object({}), run: () => ({ n: ++ran.second }) }),
    },
    async run({ tool, sleep }) {
      const one = await tool('first', {})
      await sleep(nap)
      const two = await tool('second', {})
      return { ok: true, first: one.n, second: two.n }
    },
  })
  return { workflow, ran }
}

/** Starts the two-step run and stops it during its sleep, as a SIGKILL would (nothing after it is written). */
async function killedDuringSleep(clock: ManualClock, runsDir: string, workflow: ReturnType<typeof defineWorkflow>): Promise<RunResult> {
  const handle = await startWorkflowRun(workflow, { runsDir, clock })
  await untilSleeping(clock)
  handle.suspend('killed during the sleep')
  const stopped = await handle.done
  expect(stopped.suspended).toBe(true)
  return stopped
}

describe('sleep()', () => {
  it('journals timer_start and timer_fired, counts as waiting only while it sleeps, and spends no attempt', async () => {
    const clock = createManualClock(START)
    const { workflow } = twoStepWorkflow()
    const changes: boolean[] = []
    const handle = await startWorkflowRun(workflow, { runsDir: tempRunsDir(), clock, onWaitingChange: (now) => changes.push(now) })
    await untilSleeping(clock)
    expect(handle.waitingOnly()).toBe(true)
    expect(clock.pendingSleeps()).toEqual([{ wakeAt: START + 2_000, ms: 2_000 }])
    await clock.advance(2_000)
    const result = await handle.done
    expect(result).toMatchObject({ disposition: 'completed', result: { ok: true, first: 1, second: 1 } })
    expect(changes).toEqual([true, false])
    const lines = journalOf(result)
    const [started] = linesOfType(lines, 'timer_start')
    expect(started).toMatchObject({ timerId: 'timer-2', logicalCallId: 'sleep-2', ordinal: '2', dueAt: new Date(START + 2_000).toISOString() })
    expect(linesOfType(lines, 'timer_fired')).toEqual([expect.objectContaining({ timerId: 'timer-2', firedAt: new Date(START + 2_000).toISOString(), lateMs: 0 })])
    // The tool after the sleep keeps the position after it: the sleep took one, as any call does.
    expect(linesOfType(lines, 'tool_start').map((line) => line.ordinal)).toEqual(['1', '3'])
    expect(linesOfType(lines, 'agent_start')).toHaveLength(0)
  })

  it('killed during the sleep and resumed after the due time: fires at once, late, and does not run the first tool again', async () => {
    const clock = createManualClock(START)
    const runsDir = tempRunsDir()
    const { workflow, ran } = twoStepWorkflow()
    const stopped = await killedDuringSleep(clock, runsDir, workflow)
    const asleep = await readStoredRun(createFileRunStore(runsDir), stopped.runId)
    expect(asleep.view.sleepingUntil).toBe(new Date(START + 2_000).toISOString())
    expect(asleep.view.openTimers()).toEqual([{ timerId: 'timer-2', logicalCallId: 'sleep-2', ordinal: '2', dueAt: new Date(START + 2_000).toISOString() }])

    await clock.advance(5_000)
    const resumed = await createRuntime({ workflows: [], runsDir }).resume(stopped.runId, { workflow, clock })
    const result = await resumed.done
    expect(result).toMatchObject({ disposition: 'completed', result: { ok: true, first: 1, second: 1 } })
    expect(ran).toEqual({ first: 1, second: 1 })
    const fired = linesOfType(journalOf(result), 'timer_fired')
    expect(fired).toEqual([expect.objectContaining({ timerId: 'timer-2', firedAt: new Date(START + 5_000).toISOString(), lateMs: 3_000 })])
    expect(fired[0]?.replayed).toBeUndefined()
    const ended = await readStoredRun(createFileRunStore(runsDir), stopped.runId)
    expect(ended.view.sleepingUntil).toBeUndefined()
    expect(ended.view.openTimers()).toEqual([])
  })

  it('resumed before the due time: waits only for what is left of the absolute dueAt', async () => {
    const clock = createManualClock(START)
    const runsDir = tempRunsDir()
    const { workflow, ran } = twoStepWorkflow()
    const stopped = await killedDuringSleep(clock, runsDir, workflow)
    await clock.advance(500)
    const resumed = await createRuntime({ workflows: [], runsDir }).resume(stopped.runId, { workflow, clock })
    await untilSleeping(clock)
    expect(clock.pendingSleeps()).toEqual([{ wakeAt: START + 2_000, ms: 1_500 }])
    expect(resumed.waitingOnly()).toBe(true)
    await clock.advance(1_499)
    expect(ran.second).toBe(0)
    await clock.advance(1)
    const result = await resumed.done
    expect(result.disposition).toBe('completed')
    expect(ran).toEqual({ first: 1, second: 1 })
    const lines = journalOf(result)
    // The resumed execution started no new timer: it took the recorded dueAt.
    expect(linesOfType(lines, 'timer_start')).toEqual([expect.objectContaining({ timerId: 'timer-2', dueAt: new Date(START + 2_000).toISOString(), replayed: true })])
    expect(linesOfType(lines, 'timer_fired')).toEqual([expect.objectContaining({ lateMs: 0, firedAt: new Date(START + 2_000).toISOString() })])
  })

  it('a replay serves fired timers from the journal without waiting', async () => {
    const clock = createManualClock(START)
    const runsDir = tempRunsDir()
    const { workflow } = twoStepWorkflow()
    const handle = await startWorkflowRun(workflow, { runsDir, clock })
    await untilSleeping(clock)
    await clock.advance(2_250)
    const finished = await handle.done
    // Nothing moves the clock now: a replay that waited would never end.
    const replayed = await replayRun(finished.runId, workflow, { runsDir, clock })
    expect(replayed.ok).toBe(true)
    expect(replayed.run.result).toEqual(finished.result)
    expect(clock.pendingSleeps()).toEqual([])
    // What the journal recorded, not the clock's reading now (START + 2250).
    const fired = linesOfType(journalOf(replayed.run), 'timer_fired')
    expect(fired).toEqual([expect.objectContaining({ timerId: 'timer-2', firedAt: new Date(START + 2_000).toISOString(), lateMs: 0, replayed: true })])
  })

  it('the deploy check waits for no timer: it serves fired ones and stops at one still sleeping', async () => {
    const clock = createManualClock(START)
    const runsDir = tempRunsDir()
    const { workflow, ran } = twoStepWorkflow('7d')
    const stopped = await killedDuringSleep(clock, runsDir, workflow)
    const done = await startWorkflowRun(workflow, { runsDir, clock })
    await untilSleeping(clock)
    await clock.advance(7 * 86_400_000)
    const finished = await done.done
    // The check runs on the real clock: waiting out a sleep would hang it, and a run ahead would run the tools.
    const report = await checkDeploy({ runsDir, workflows: [workflow], all: true })
    expect(report.ok).toBe(true)
    expect(new Map(report.runs.map((run) => [run.runId, run.verdict]))).toEqual(
      new Map([
        [stopped.runId, 'identical'],
        [finished.runId, 'identical'],
      ]),
    )
    expect(ran).toEqual({ first: 2, second: 1 })
  })

  it('a cancel ends a sleep at once: the run ends cancelled and the timer never fires', async () => {
    const clock = createManualClock(START)
    const { workflow, ran } = twoStepWorkflow()
    const handle = await startWorkflowRun(workflow, { runsDir: tempRunsDir(), clock })
    await untilSleeping(clock)
    handle.cancel('stop it')
    const result = await handle.done
    expect(result.disposition).toBe('cancelled')
    expect(clock.now()).toBe(START)
    expect(clock.pendingSleeps()).toEqual([])
    expect(ran.second).toBe(0)
    expect(linesOfType(journalOf(result), 'timer_fired')).toEqual([])
  })

  it("refuses, before it starts, a sleep that would end after the run's deadline, with the deadline's hard stop", async () => {
    const clock = createManualClock(START)
    const { workflow, ran } = twoStepWorkflow()
    const result = await (await startWorkflowRun(workflow, { runsDir: tempRunsDir(), clock, budgets: { deadlineMs: 1_500 } })).done
    expect(result.disposition).toBe('failed')
    expect(result.error?.code).toBe('WORKFLOW_RUN_DEADLINE')
    expect(clock.now()).toBe(START)
    expect(ran).toEqual({ first: 1, second: 0 })
    const lines = journalOf(result)
    expect(linesOfType(lines, 'timer_start')).toEqual([])
    const refusal = linesOfType(lines, 'log').find((line) => line.level === 'warn')
    expect(refusal?.message).toContain("after the run's deadline")
    expect(refusal?.data).toMatchObject({ timerId: 'timer-2', refused: 'run-deadline', dueAt: new Date(START + 2_000).toISOString(), deadlineAt: new Date(START + 1_500).toISOString() })
  })

  it('a sleep that ends before the deadline runs', async () => {
    const clock = createManualClock(START)
    const { workflow } = twoStepWorkflow()
    const handle = await startWorkflowRun(workflow, { runsDir: tempRunsDir(), clock, budgets: { deadlineMs: 3_000 } })
    await untilSleeping(clock)
    await clock.advance(2_000)
    expect((await handle.done).disposition).toBe('completed')
  })

  it('sleeps until a Date on the run clock', async () => {
    const clock = createManualClock(START)
    const handle = await startWorkflowRun(async ({ sleep }) => sleep({ until: new Date(START + 60_000) }), { runsDir: tempRunsDir(), clock })
    await untilSleeping(clock)
    expect(clock.pendingSleeps()).toEqual([{ wakeAt: START + 60_000, ms: 60_000 }])
    await clock.advance(60_000)
    expect((await handle.done).disposition).toBe('completed')
  })

  it.each<[SleepFor, string]>([
    [-1, '-1 milliseconds'],
    [Number.NaN, 'NaN milliseconds'],
    [Number.POSITIVE_INFINITY, 'Infinity milliseconds'],
    ['10', '"10"'],
    ['ten minutes', '"ten minutes"'],
    ['-5s', '"-5s"'],
    [{ until: new Date('not a date') }, 'not a valid Date'],
  ])('refuses the duration %s with a typed usage error naming it', async (duration, named) => {
    const result = await (await startWorkflowRun(async ({ sleep }) => sleep(duration), { runsDir: tempRunsDir() })).done
    expect(result.disposition).toBe('failed')
    expect(result.error?.code).toBe('SLEEP_DURATION_INVALID')
    expect(result.error?.message).toContain(named)
    expect(result.error?.message).toContain('500ms, 30s, 10m')
    expect(linesOfType(journalOf(result), 'timer_start')).toEqual([])
  })

  it('reads every unit and refuses every negative or non-finite number (property)', () => {
    const units = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000 }), fc.constantFrom(...(Object.keys(units) as (keyof typeof units)[])), fc.integer({ min: 0, max: 2 ** 40 }), (amount, unit, now) => {
        expect(sleepDueAt(`${amount}${unit}`, now)).toBe(now + amount * units[unit])
      }),
    )
    fc.assert(
      fc.property(fc.oneof(fc.double({ max: -Number.MIN_VALUE }), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY)), (bad) => {
        expect(() => sleepDueAt(bad, 0)).toThrow(RuntimeInputError)
      }),
    )
  })
})
