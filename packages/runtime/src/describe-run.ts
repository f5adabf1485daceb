import type { RunCost, RunCounts, RunView, SerializedError } from '@locus/journal'
import type { AnswerOutcome, JsonValue, RunDisposition } from '@locus/outcome'
import type { RunRowStatus, RunStore } from '@locus/store'
import { executionStanding } from './execution-standing.js'
import { type StoredRun, readStoredRun } from './read-run.js'

/**
 * How a run stands, in one shape whoever asks: `runtime.describe(runId)`.
 * From the live fold when this process executes the run (no store read),
 * from the store otherwise.
 */
export interface RunDescription {
  readonly runId: string
  /** The workflow of its `run_start`; undefined for a run queued and not started yet. */
  readonly workflow: string | undefined
  /** The summary row's status: `running`, `waiting`, `suspended`, `queued`, or how it ended. */
  readonly status: RunRowStatus
  /** True when this process executes the run now: every figure then comes from its live fold. */
  readonly live: boolean
  /** The latest root or resume execution. */
  readonly executionId: string
  /** How the run ended; undefined while it has not. */
  readonly disposition: RunDisposition | undefined
  readonly answerOutcome: AnswerOutcome | undefined
  /** The one meaning of `ok`: it ended `completed` and its answer (when it judged one) is `complete` ({@link isOkEnding}). */
  readonly ok: boolean
  readonly result: JsonValue | undefined
  readonly error: SerializedError | undefined
  /** The run's figures, every execution added up. */
  readonly counts: Readonly<RunCounts>
  readonly cost: Readonly<RunCost> | undefined
  /** Deferral and timer ids the run waits on now. */
  readonly waitingOn: readonly string[]
  /** When the earliest open `sleep()` timer is due, while the run has not ended. */
  readonly sleepingUntil: string | undefined
  readonly startedAt: string | undefined
  readonly durationMs: number | undefined
}

/**
 * The one definition of a successful ending, for `result.json`'s readers, the
 * server's result route and {@link RunDescription.ok}: `completed`, and an
 * answer judged `complete` when the run judged one. A failed, cancelled or
 * partial run is never ok.
 */
export function isOkEnding(disposition: RunDisposition | undefined, answerOutcome: string | undefined): boolean {
  return disposition === 'completed' && (answerOutcome === undefined || answerOutcome === 'complete')
}

/** What only the caller knows: where the run is executed, and what it waits on there. */
export interface DescribeFacts {
  readonly runId: string
  readonly executionId: string
  readonly live: boolean
  /** The status while the run has not ended. */
  readonly openStatus: RunRowStatus
  readonly pendingDeferrals: readonly string[]
}

/** A description from a fold of the run's lines and the facts its caller holds. */
export function describeFromView(view: RunView, facts: DescribeFacts): RunDescription {
  const end = view.runEnd
  const ended = end !== undefined
  const timers = ended ? [] : view.openTimers().map((timer) => timer.timerId)
  return {
    runId: facts.runId,
    workflow: view.workflow,
    status: end?.disposition ?? facts.openStatus,
    live: facts.live,
    executionId: facts.executionId,
    disposition: end?.disposition,
    answerOutcome: end?.answerOutcome,
    ok: isOkEnding(end?.disposition, end?.answerOutcome),
    result: end?.result,
    error: end?.error,
    counts: { ...view.counts },
    cost: view.cost === undefined ? undefined : { ...view.cost },
    waitingOn: ended ? [] : [...facts.pendingDeferrals, ...timers],
    sleepingUntil: ended ? undefined : view.sleepingUntil,
    startedAt: view.runStart?.ts,
    durationMs: view.durationMs,
  }
}

/**
 * A run no process here executes, from the store: its summary row for the
 * status and what it waits on, and one read of its executions for the figures
 * (`read`: the runtime passes its reader that keeps finished runs).
 */
export async function describeStoredRun(store: RunStore, runId: string, read: (runId: string) => Promise<StoredRun> = (id) => readStoredRun(store, id)): Promise<RunDescription> {
  const [stored, row] = await Promise.all([read(runId), store.readRunRow(runId)])
  const latest = stored.latest
  const standing = executionStanding(latest)
  const openStatus: RunRowStatus = row?.status ?? (standing === 'suspended' ? 'suspended' : latest.view.runStart === undefined ? 'queued' : 'running')
  const timers = new Set(stored.view.openTimers().map((timer) => timer.timerId))
  return describeFromView(stored.view, {
    runId,
    executionId: latest.info.executionId,
    live: false,
    openStatus,
    pendingDeferrals: (row?.waitingOn ?? []).filter((id) => !timers.has(id)),
  })
}
