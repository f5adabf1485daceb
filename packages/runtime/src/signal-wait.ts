import { WorkflowCancelledError, allocateChildId, currentSlot } from '@locus/groups'
import type { SignalReceivedLine } from '@locus/journal'
import type { JsonValue } from '@locus/outcome'
import type { WaitForSignalOptions } from './define.js'
import { LiveCallRefusedError } from './check-only-replay.js'
import { RuntimeInputError } from './errors.js'
import { positionToken } from './ids.js'
import type { RunState } from './run-state.js'
import { sleepDueAt } from './sleep-call.js'

/**
 * The `waitForSignal()` of a workflow context. It takes a position like any
 * call (`signal-wait-<position>`), so a resumed run serves a wait an earlier
 * execution ended from the journal (the same signal, or the same timeout),
 * and a wait it started waits only for what is left of its timeout.
 */
export async function callWaitForSignal(run: RunState, name: string, options: WaitForSignalOptions = {}): Promise<JsonValue | { readonly timedOut: true }> {
  const declared = run.workflow.signals
  if (declared === undefined || !Object.hasOwn(declared, name)) {
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `waitForSignal("${name}"): the workflow declares no such signal. Declared: ${Object.keys(declared ?? {}).join(', ') || '(none)'}.`, [`signal: "${name}" is not declared`])
  }
  const askedDueAt = options.timeout === undefined ? undefined : sleepDueAt(options.timeout, run.clock.now())
  const slot = currentSlot()
  const position = positionToken(allocateChildId())
  const waitId = `signal-wait-${position}`
  const inbox = run.signals
  const recorded = inbox.recorded.waits.get(waitId)
  if (recorded?.end !== undefined) {
    const end = recorded.end
    run.emit({ type: 'signal_wait_end', waitId, name, ...(end.signalSeq === undefined ? {} : { signalSeq: end.signalSeq }), ...(end.timedOut === true ? { timedOut: true } : {}), replayed: true })
    return end.signalSeq === undefined ? { timedOut: true } : inbox.payloadOf(end.signalSeq)
  }
  const ready = inbox.take(name)
  if (ready !== undefined) {
    run.emit({ type: 'signal_wait_end', waitId, name, signalSeq: ready.signalSeq })
    return ready.payload
  }
  // The deploy check waits for nothing: a wait the recording did not end ends the check's replay there.
  if (run.refusesLiveWaits) throw new LiveCallRefusedError(position, 'a waitForSignal() the recording did not end')
  run.checkDispatch()
  const dueAt = recorded?.dueAt ?? askedDueAt
  run.emit({
    type: 'signal_wait_start',
    waitId,
    name,
    ordinal: position,
    ...(dueAt === undefined ? {} : { dueAt: new Date(dueAt).toISOString() }),
    ...(slot?.label === undefined ? {} : { label: slot.label }),
    ...(slot?.groupId === undefined ? {} : { groupId: slot.groupId }),
    ...(recorded === undefined ? {} : { replayed: true }),
  })
  await run.commitStart()
  const endWait = run.activity.beginWait()
  const timeUp = new AbortController()
  let line: SignalReceivedLine | undefined
  try {
    const until =
      dueAt === undefined
        ? new Promise<void>(() => undefined)
        : (async () => {
            for (let now = run.clock.now(); now < dueAt && !run.signal.aborted && !timeUp.signal.aborted; now = run.clock.now()) {
              await run.clock.sleep(dueAt - now, AbortSignal.any([run.signal, timeUp.signal])).catch(() => undefined)
            }
          })()
    line = await inbox.wait(name, run.signal, until)
  } finally {
    timeUp.abort()
    endWait()
  }
  if (line === undefined && run.signal.aborted) throw new WorkflowCancelledError({ notDispatched: [] })
  if (line === undefined) {
    run.emit({ type: 'signal_wait_end', waitId, name, timedOut: true })
    return { timedOut: true }
  }
  run.emit({ type: 'signal_wait_end', waitId, name, signalSeq: line.signalSeq })
  return line.payload
}
