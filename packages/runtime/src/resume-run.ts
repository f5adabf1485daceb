import { closeSync, existsSync, openSync, readSync, readdirSync, rmdirSync } from 'node:fs'
import { join } from 'node:path'
import { type JsonValue } from '@locus/outcome'
import { RUN_LAYOUT, parseJournalLine, runPaths } from '@locus/journal'
import { type Recording, type ReplayDivergence, type ReplayReport, loadRecording, mergeRecordings } from '@locus/replay'
import type { WorkflowDefinition } from './define.js'
import { RuntimeInputError } from './errors.js'
import { claimExecutionDirectory, nextExecutionId } from './run-directory.js'
import { carryOver, replayInStore, resumeInStore } from './resume-in-store.js'
import { lastJournalLine, refuseCompleted } from './completed-run.js'
import { acquireRunLock } from './run-lock.js'
import type { RunOptions } from './run-options.js'
import { type RunHandle, type RunResult, type WorkflowFunction, launchRun, resolveRunsDir } from './run-workflow-script.js'

/** Prefixes of the nested execution directories a run grows. */
export const RESUME_EXECUTION_PREFIX = 'resume-'
export const REPLAY_EXECUTION_PREFIX = 'replay-'

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

interface RunOnDisk {
  readonly runsDir: string
  readonly runId: string
  readonly rootDir: string
  /** Every `resume-NNN` directory, for numbering, including one whose execution never wrote a journal. */
  readonly claimed: readonly string[]
  /** The resumed executions that left a journal, in order. */
  readonly executions: readonly string[]
  readonly input: JsonValue | undefined
  readonly lastExecutionId: string
}

function findRun(runId: string, options: Pick<RunOptions, 'runsDir' | 'cwd'>): RunOnDisk {
  const runsDir = resolveRunsDir(options)
  const root = runPaths(runsDir, runId)
  if (!existsSync(root.journalPath)) {
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `No run "${runId}" in ${runsDir} (no ${root.journalPath}). List runs with \`locus ls\` or pass the right runs directory.`, [
      `runId: "${runId}" not found`,
    ])
  }
  const executionsDir = join(root.rootDir, RUN_LAYOUT.executions)
  const claimed = existsSync(executionsDir)
    ? readdirSync(executionsDir).filter((name) => name.startsWith(RESUME_EXECUTION_PREFIX)).sort()
    : []
  const executions = claimed.filter((name) => existsSync(join(executionsDir, name, RUN_LAYOUT.journal)))
  return { runsDir, runId, rootDir: root.rootDir, claimed, executions, input: recordedInput(root.journalPath), lastExecutionId: executions.at(-1) ?? root.executionId }
}

/** The input recorded on the run_start line, the journal's first line: read just that, not the whole file. */
function recordedInput(journalPath: string): JsonValue | undefined {
  const fd = openSync(journalPath, 'r')
  try {
    let text = ''
    const chunk = Buffer.alloc(64 * 1024)
    for (let position = 0; !text.includes('\n'); ) {
      const read = readSync(fd, chunk, 0, chunk.length, position)
      if (read === 0) break
      text += chunk.toString('utf8', 0, read)
      position += read
    }
    const firstLine = text.split('\n', 1)[0] ?? ''
    const line = parseJournalLine(JSON.parse(firstLine))
    return line.type === 'run_start' ? line.input : undefined
  } catch {
    // A journal torn before its first line ended recorded no input.
    return undefined
  } finally {
    closeSync(fd)
  }
}

/** Removes an execution directory claimed for a launch that was refused before it wrote anything (only if still empty). */
function unclaim(rootDir: string, executionId: string): void {
  try {
    rmdirSync(join(rootDir, RUN_LAYOUT.executions, executionId))
  } catch {
    // Not empty (the launch got as far as writing) or already gone: leave it.
  }
}

/**
 * Reads the earlier executions of a run once each, streamed: the merged
 * recording of the root run and every earlier resume (a later execution's
 * answer for an ordinal wins; replayed calls leave no envelope of their own,
 * so the execution that really made the call keeps recording it), and what a
 * resume carries over from their journals (see {@link carryOver}).
 */
function historyOf(run: RunOnDisk): { recording: Recording; openDeferrals: string[]; priorChildAttempts: Map<string, number> } {
  const root = runPaths(run.runsDir, run.runId)
  const sources = [root.executionDir, ...run.executions.map((executionId) => runPaths(run.runsDir, run.runId, executionId).executionDir)]
  const carried = carryOver()
  const recordings = sources.filter((source) => existsSync(join(source, RUN_LAYOUT.journal))).map((source) => loadRecording(source, { onLine: carried.see }))
  return { recording: mergeRecordings(recordings), ...carried.result() }
}

/**
 * Resumes a run: a new execution in a fixed nested directory under the root
 * run replays the recorded prefix (no host calls while keys match) and
 * continues live where the run stopped: after a crash, a cancellation, or a
 * call that failed (recorded failures run again). The first call whose
 * request differs trips the one-way divergence latch: it and every later call
 * run live, and a `replay_diverged` line says where and why.
 *
 * The execution holds the run's ownership lock (`owner.lock`) from before its
 * `resume-NNN` directory is claimed until it ends. While another live process
 * holds it (a run or a resume), this throws `RunOwnershipError` with code
 * `RUN_OWNED` and writes nothing; a dead holder's lock is taken over.
 */
export async function resumeRun<TInput>(
  runId: string,
  workflow: WorkflowDefinition<TInput> | WorkflowFunction,
  options: RunOptions = {},
): Promise<ResumeResult> {
  if (options.store !== undefined) {
    const { result, resumedFrom } = await resumeInStore(runId, workflow, { ...options, store: options.store })
    return { ...result, resumedFrom, replayed: result.replay?.counts.replayed ?? 0, live: result.replay?.counts.live ?? 0, divergence: result.replay?.divergence ?? null }
  }
  const seen = findRun(runId, options)
  // Owner first: while a live process holds the run (a run or another resume), this throws RUN_OWNED and writes nothing.
  const lock = acquireRunLock(seen.rootDir, { runId, executionId: nextExecutionId(RESUME_EXECUTION_PREFIX, seen.claimed) })
  let run: RunOnDisk
  let handle: RunHandle
  let executionId: string | undefined
  try {
    // Read again under the lock: an execution that ended meanwhile belongs in the recording.
    run = findRun(runId, options)
    // Decided here, under the lock: of two resumes started together, the second sees what the first completed.
    if (options.refuseCompleted === true) refuseCompleted(runId, run.lastExecutionId, lastJournalLine(run.lastExecutionId === runId ? runPaths(run.runsDir, runId).journalPath : runPaths(run.runsDir, runId, run.lastExecutionId).journalPath))
    executionId = claimExecutionDirectory(run.rootDir, RESUME_EXECUTION_PREFIX, run.claimed)
    lock.setExecutionId(executionId)
    const history = historyOf(run)
    handle = launchRun(workflow, { ...options, runId, ...(options.input === undefined ? { input: run.input } : {}) }, {
      executionId,
      recording: history.recording,
      openDeferrals: history.openDeferrals,
      priorChildAttempts: history.priorChildAttempts,
      resumeOf: run.lastExecutionId,
      lock,
    })
  } catch (error) {
    if (executionId !== undefined) unclaim(seen.rootDir, executionId)
    lock.release()
    throw error
  }
  // launchRun releases the lock when the execution ends, however it ends.
  const result = await handle.done
  const report = result.replay
  return {
    ...result,
    resumedFrom: run.lastExecutionId,
    replayed: report?.counts.replayed ?? 0,
    live: report?.counts.live ?? 0,
    divergence: report?.divergence ?? null,
  }
}

/**
 * Re-runs a finished run entirely from its recording, with no host: the
 * determinism check. Every recorded call, failed ones included, answers from
 * the recording while its key matches; a call that diverges or was never
 * recorded fails as `sdk-unavailable` because there is no host to ask. The
 * result reports per call (matched, diverged, missing, extra) instead of
 * throwing.
 */
export async function replayRun<TInput>(
  runId: string,
  workflow: WorkflowDefinition<TInput> | WorkflowFunction,
  options: Omit<RunOptions, 'host'> = {},
): Promise<ReplayRunResult> {
  if (options.store !== undefined) {
    const result = await replayInStore(runId, workflow, { ...options, store: options.store })
    if (result.replay === undefined) throw new Error('replayRun: the replay execution produced no report')
    return { ok: result.replay.identical, runId, executionDir: result.executionDir, report: result.replay, divergence: result.replay.divergence, run: result }
  }
  const run = findRun(runId, options)
  const executionsDir = join(run.rootDir, RUN_LAYOUT.executions)
  const replays = existsSync(executionsDir) ? readdirSync(executionsDir).filter((name) => name.startsWith(REPLAY_EXECUTION_PREFIX)) : []
  const { host: _ignored, ...withoutHost } = options as RunOptions
  // A replay writes only into its own replay-NNN directory, claimed exclusively, so it takes no ownership lock.
  const executionId = claimExecutionDirectory(run.rootDir, REPLAY_EXECUTION_PREFIX, replays)
  let handle: RunHandle
  try {
    handle = launchRun(workflow, { ...withoutHost, runId, ...(options.input === undefined ? { input: run.input } : {}) }, {
      executionId,
      recording: historyOf(run).recording,
      replayFailures: true,
      resumeOf: run.lastExecutionId,
    })
  } catch (error) {
    unclaim(run.rootDir, executionId)
    throw error
  }
  const result = await handle.done
  const report = result.replay
  if (report === undefined) throw new Error('replayRun: the replay execution produced no report')
  return { ok: report.identical, runId, executionDir: result.executionDir, report, divergence: report.divergence, run: result }
}
