import { WorkflowCancelledError, WorkflowRunDeadlineError, allocateChildId, currentSlot } from '@locus/groups'
import { LiveCallRefusedError } from './check-only-replay.js'
import { DURATION_FORMS, durationMs } from './duration.js'
import { RuntimeInputError } from './errors.js'
import { positionToken } from './ids.js'
import type { SleepFor } from './define.js'
import type { RunState } from './run-state.js'

const SLEEP_FORMS = `a duration such as ${DURATION_FORMS}, a number of milliseconds (0 or more), or { until: Date }`

function invalid(what: string): never {
  throw new RuntimeInputError('SLEEP_DURATION_INVALID', `sleep() was given ${what}; pass ${SLEEP_FORMS}.`, [`duration: ${what}`])
}

/**
 * How long a `sleep()` asks for, from the clock reading `now`: the clock time
 * it is due at.
 *
 * @throws RuntimeInputError `SLEEP_DURATION_INVALID` naming the text and the forms accepted
 */
export function sleepDueAt(duration: SleepFor, now: number): number {
  if (typeof duration === 'number') {
    if (!Number.isFinite(duration) || duration < 0) invalid(`${String(duration)} milliseconds`)
    return now + Math.round(duration)
  }
  if (typeof duration === 'string') {
    const milliseconds = durationMs(duration)
    if (milliseconds === undefined) invalid(JSON.stringify(duration))
    return now + milliseconds
  }
  // Scripts are plain JavaScript too: whatever came in is checked, not trusted to match the type.
  const given: unknown = duration
  if (typeof given === 'object' && given !== null && 'until' in given) {
    const until = given.until
    if (!(until instanceof Date) || !Number.isFinite(until.getTime())) invalid(`{ until: ${String(until)} }, not a valid Date`)
    return until.getTime()
  }
  return invalid(given === null ? 'null' : `a ${typeof given}`)
}

const iso = (ms: number): string => new Date(ms).toISOString()

/**
 * The `sleep()` of a workflow context. It takes a position like any call, so
 * its timer (`timer-<position>`) is the same in every execution: a timer an
 * earlier execution fired is served from the journal at once; one it started
 * waits only for what is left of its absolute `dueAt`. A new timer that would
 * fire after the run's deadline is refused before it starts, with the
 * deadline's hard stop. It charges no attempt, retry or invocation; while it
 * waits the run counts as waiting only (a worker may park it), and a cancel
 * ends it at once.
 */
export async function callSleep(run: RunState, duration: SleepFor): Promise<void> {
  // Checked before the sleep takes a position: a bad duration is the script's bug, and it changes no ordinal.
  const askedDueAt = sleepDueAt(duration, run.clock.now())
  const slot = currentSlot()
  const ordinal = allocateChildId()
  const position = positionToken(ordinal)
  const timerId = `timer-${position}`
  const where = {
    timerId,
    logicalCallId: `sleep-${position}`,
    ordinal,
    ...(slot?.label === undefined ? {} : { label: slot.label }),
    ...(slot?.groupId === undefined ? {} : { groupId: slot.groupId }),
  }
  const recorded = run.recordedTimers.get(timerId)
  if (recorded?.fired !== undefined) {
    run.emit({ type: 'timer_start', ...where, dueAt: iso(recorded.dueAt), replayed: true })
    run.emit({ type: 'timer_fired', timerId, firedAt: iso(recorded.fired.firedAt), lateMs: recorded.fired.lateMs, replayed: true })
    return
  }
  // The deploy check waits for nothing: a timer the run had not fired when it stopped ends the check's replay there.
  if (run.refusesLiveWaits) throw new LiveCallRefusedError(ordinal, recorded === undefined ? 'a sleep past the end of the recording' : 'a sleep whose timer had not fired')
  run.checkDispatch()
  const dueAt = recorded?.dueAt ?? askedDueAt
  const deadlineAt = run.deadlineAt
  if (recorded === undefined && deadlineAt !== undefined && run.deadlineMs !== undefined && dueAt > deadlineAt) {
    const why = `sleep ${timerId} would fire at ${iso(dueAt)}, after the run's deadline at ${iso(deadlineAt)}; it was refused before it started`
    run.emit({ type: 'log', level: 'warn', message: why, data: { timerId, dueAt: iso(dueAt), deadlineAt: iso(deadlineAt), refused: 'run-deadline' } })
    run.hardStop(new WorkflowRunDeadlineError({ deadlineMs: run.deadlineMs, elapsedMs: dueAt - run.startedAt, cause: new Error(why) }))
  }
  run.emit({ type: 'timer_start', ...where, dueAt: iso(dueAt), ...(recorded === undefined ? {} : { replayed: true }) })
  // Committed before the wait: a crash during the sleep leaves the timer for a resume to find.
  await run.commitStart()
  const endWait = run.activity.beginWait()
  try {
    for (let now = run.clock.now(); now < dueAt && !run.signal.aborted; now = run.clock.now()) {
      await run.clock.sleep(dueAt - now, run.signal)
    }
  } finally {
    endWait()
  }
  if (run.signal.aborted) throw new WorkflowCancelledError({ notDispatched: [] })
  const firedAt = run.clock.now()
  run.emit({ type: 'timer_fired', timerId, firedAt: iso(firedAt), lateMs: Math.max(0, firedAt - dueAt) })
}
