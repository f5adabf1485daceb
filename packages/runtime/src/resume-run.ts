import { recordedSignalsOf } from './signals.js'
import { recordedUpdatesOf } from './updates.js'
import { type ReplayDivergence, type ReplayReport } from '@locus/replay'
import { EXECUTION_ID_PREFIX, type ExecutionInfo, type RunStore, RunNotFoundError, allocatedExecutionId } from '@locus/store'
import type { WorkflowDefinition } from './define.js'
import { RuntimeInputError } from './errors.js'
import { readRunHistory, type RunHistory } from './run-history.js'
import { refuseCompleted } from './completed-run.js'
import type { RunOptions } from './run-options.js'
import { type ExecutionHandle, type RunResult, type WorkflowFunction, launchRun, storeOf } from './run-workflow-script.js'

/** Prefixes of the executions a run grows; the store allocates their numbers. */
export const RESUME_EXECUTION_PREFIX = EXECUTION_ID_PREFIX.resume
export const REPLAY_EXECUTION_PREFIX = EXECUTION_ID_PREFIX.replay

/** What a resumed execution did besides its own run result. */
export interface ResumeResult extends RunResult {
  /** The execution it continued from: the root run or the previous resume. */
  readonly resumedFrom: string
  /** Calls answered from the recording, without a host call. */
  readonly replayed: number
  /** Calls that ran live: past the recorded prefix, re-run after a failure, or after a divergence. */
  readonly live: number
  readonly divergence: ReplayDivergence | null
}

/** The result of a determinism check. */
export interface ReplayRunResult {
  /** True when every recorded call was asked for again with its recorded key, and nothing else was asked. */
  readonly ok: boolean
  readonly runId: string
  /** Where the replay's own journal and result were written. */
  readonly executionDir: string
  readonly report: ReplayReport
  readonly divergence: ReplayDivergence | null
  /** The replayed execution's own end, for diagnosis. */
  readonly run: RunResult
}

/** `read`, with a store that does not hold the run told as a usage error naming where it was looked for. */
async function inKnownRun<T>(runId: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (error) {
    if (!RunNotFoundError.isInstance(error)) throw error
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `${error.message} Pass the store (or runs directory) the run was started in.`, [`runId: "${runId}" not found`])
  }
}

/** The history of a run, or a usage error naming where it was looked for. */
async function historyOf(runId: string, options: RunOptions): Promise<RunHistory> {
  const store = storeOf(options)
  return inKnownRun(runId, () => readRunHistory(store, runId))
}

/** The run's executions, or a usage error when the store does not hold it: a resume reads the run's history only under its claim. */
async function executionsOf(store: RunStore, runId: string): Promise<ExecutionInfo[]> {
  return inKnownRun(runId, async () => {
    const executions = await store.listExecutions(runId)
    if (executions.some((execution) => execution.kind === 'root')) return executions
    throw new RunNotFoundError(runId, `the ${store.kind} store (it holds no root execution)`)
  })
}

/** The resume id after the highest one the run has: what the store will most likely allocate next. */
function nextResumeId(executions: readonly ExecutionInfo[]): string {
  let highest = 0
  for (const info of executions) {
    if (info.kind !== 'resume') continue
    const number = Number(info.executionId.slice(RESUME_EXECUTION_PREFIX.length))
    if (Number.isSafeInteger(number)) highest = Math.max(highest, number)
  }
  return allocatedExecutionId('resume', highest + 1)
}

/** A resume or replay that has started: its execution's handle (to cancel, suspend or flush it) and its end. */
export interface StartedExecution<TResult> {
  readonly handle: ExecutionHandle
  readonly done: Promise<TResult>
}

/**
 * Starts a resume and resolves once it has started, with its execution's
 * handle (`createRuntime().resume` wraps it in the public `RunHandle`). A new
 * `resume-NNN` execution replays the recorded prefix and goes on live where
 * the run stopped. The resume claims the run in its store before its
 * execution exists (while a live owner holds it: `RUN_OWNED`, nothing
 * written) and holds the claim until it ends.
 */
export async function startResume<TInput>(
  runId: string,
  workflow: WorkflowDefinition<TInput> | WorkflowFunction,
  options: RunOptions = {},
): Promise<StartedExecution<ResumeResult>> {
  const store = storeOf(options)
  // Known run first (a clear error for a wrong id), then the owner: while a live process holds the run, this throws RUN_OWNED and writes nothing.
  const executions = await executionsOf(store, runId)
  // The claim names the execution it expects to be; the store allocates the real id, and the claim is updated to it.
  const ownership = await store.claim({ runId, executionId: nextResumeId(executions) })
  let history: RunHistory
  let handle: ExecutionHandle
  try {
    // Read under the claim: an execution that ended meanwhile belongs in the recording.
    history = await historyOf(runId, { store })
    // Decided here, under the claim: of two resumes started together, the second sees what the first completed.
    if (options.refuseCompleted === true) refuseCompleted(runId, history.lastExecution.executionId, history.lastRunEnd)
    handle = launchRun(workflow, { ...options, store, runId, ...(options.input === undefined ? { input: history.input } : {}) }, {
      kind: 'resume',
      recording: history.recording,
      openDeferrals: history.openDeferrals,
      recordedDeferrals: history.deferrals,
      priorChildAttempts: history.priorChildAttempts,
      spentBefore: history.spentUsd,
      timers: history.timers,
      signals: recordedSignalsOf(history.view),
      updates: recordedUpdatesOf(history.view),
      resumeOf: history.lastExecution.executionId,
      runView: history.view,
      ownership,
    })
  } catch (error) {
    await ownership.release()
    throw error
  }
  // The launch releases the ownership when the execution ends, however it ends.
  const resumedFrom = history.lastExecution.executionId
  const done = handle.done.then((result) => resumeResultOf(result, resumedFrom))
  return { handle, done }
}

/** A resume's end as its execution's result: what it continued from, and how many calls the recording served, from the result's replay report. */
export function resumeResultOf(result: RunResult, resumedFrom: string): ResumeResult {
  const report = result.replay
  return {
    ...result,
    resumedFrom,
    replayed: report?.counts.replayed ?? 0,
    live: report?.counts.live ?? 0,
    divergence: report?.divergence ?? null,
  }
}

/** Starts a replay (the determinism check, no host) and resolves once it has started, with its execution's handle. */
export async function startReplay<TInput>(
  runId: string,
  workflow: WorkflowDefinition<TInput> | WorkflowFunction,
  options: Omit<RunOptions, 'host'> = {},
): Promise<StartedExecution<ReplayRunResult>> {
  const store = storeOf(options)
  const history = await historyOf(runId, { store })
  const { host: _ignored, ...withoutHost } = options as RunOptions
  const handle = launchRun(workflow, { ...withoutHost, store, runId, ...(options.input === undefined ? { input: history.input } : {}) }, {
    kind: 'replay',
    recording: history.recording,
    replayFailures: true,
    timers: history.timers,
    signals: recordedSignalsOf(history.view),
    updates: recordedUpdatesOf(history.view),
    resumeOf: history.lastExecution.executionId,
  })
  const done = handle.done.then(replayResultOf)
  return { handle, done }
}

/** A replay's end as its verdict: identical or not, with the per-call report its execution's result carries. */
export function replayResultOf(result: RunResult): ReplayRunResult {
  const report = result.replay
  if (report === undefined) throw new Error('replay: the execution produced no replay report; it was not a replay')
  return { ok: report.identical, runId: result.runId, executionDir: result.executionDir, report, divergence: report.divergence, run: result }
}
