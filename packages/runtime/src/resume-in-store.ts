import type { JournalLine, RunStartLine } from '@locus/journal'
import type { JsonValue } from '@locus/outcome'
import { type Recording, createRecordingBuilder, mergeRecordings } from '@locus/replay'
import { type RunStore, RunNotFoundError } from '@locus/store'
import type { WorkflowDefinition } from './define.js'
import type { RunOptions } from './run-options.js'
import { type WorkflowFunction, launchRun } from './run-workflow-script.js'
import { refuseCompleted } from './completed-run.js'

/**
 * What a resume carries over from the journals of earlier executions, seen a
 * line at a time: deferrals opened and never settled (it waits on them under
 * the same ids), and the spawn attempts started at each ordinal (a spawn run
 * again numbers its next attempt, and names its next child execution, after
 * them).
 */
export function carryOver(): { see: (line: JournalLine) => void; result: () => { openDeferrals: string[]; priorChildAttempts: Map<string, number> } } {
  const open = new Set<string>()
  const priorChildAttempts = new Map<string, number>()
  return {
    see: (line) => {
      if (line.type === 'deferred_open') open.add(line.deferredId)
      else if (line.type === 'deferred_settled') open.delete(line.deferredId)
      else if (line.type === 'child_start') priorChildAttempts.set(line.ordinal, Math.max(priorChildAttempts.get(line.ordinal) ?? 0, line.attempt))
    },
    result: () => ({ openDeferrals: [...open], priorChildAttempts }),
  }
}

/** What a resume or replay reads of a run kept in a store, each execution streamed once. */
interface StoredHistory {
  readonly input: JsonValue | undefined
  readonly lastExecutionId: string
  /** The merged recording of the root execution and every resume; replays and child runs are not part of the run's history. */
  readonly recording: Recording
  readonly openDeferrals: string[]
  readonly priorChildAttempts: Map<string, number>
  /** The last line of the latest execution with lines. */
  readonly lastLine: JournalLine | undefined
}

async function readHistory(store: RunStore, runId: string): Promise<StoredHistory> {
  const executions = await store.listExecutions(runId)
  if (executions.length === 0) throw new RunNotFoundError(runId, `the ${store.kind} store`)
  const carried = carryOver()
  const recordings: Recording[] = []
  let start: RunStartLine | undefined
  let lastExecutionId: string | undefined
  let rootSeen = false
  let lastLine: JournalLine | undefined
  for (const info of executions.filter((execution) => execution.kind === 'root' || execution.kind === 'resume')) {
    const builder = createRecordingBuilder(info.location)
    let lines = 0
    let last: JournalLine | undefined
    for await (const line of store.readLines(info)) {
      lines += 1
      last = line
      if (info.kind === 'root' && line.type === 'run_start') start ??= line
      builder.add(line)
      carried.see(line)
    }
    if (lines === 0) continue
    if (info.kind === 'root') rootSeen = true
    recordings.push(builder.finish())
    lastExecutionId = info.executionId
    lastLine = last
  }
  if (!rootSeen) throw new RunNotFoundError(runId, `the ${store.kind} store (it holds no root execution with a journal)`)
  return { input: start?.input, lastExecutionId: lastExecutionId ?? runId, lastLine, recording: mergeRecordings(recordings), ...carried.result() }
}

/**
 * Resumes a run kept in a `RunStore` (`options.store`): the store allocates
 * the next `resume-NNN` execution, recorded calls are served from the lines
 * of the earlier executions while their keys match, and the run continues
 * live where it stopped. Nothing is read from or written to a disk. A store
 * has no ownership lock, so the caller must not resume one run twice at once.
 */
export async function resumeInStore(runId: string, workflow: WorkflowDefinition | WorkflowFunction, options: RunOptions & { readonly store: RunStore }) {
  const history = await readHistory(options.store, runId)
  // A store holds no lock of its own: the check is under whatever claimed the run (a worker's lease).
  if (options.refuseCompleted === true) refuseCompleted(runId, history.lastExecutionId, history.lastLine)
  const handle = launchRun(workflow, { ...options, runId, ...(options.input === undefined ? { input: history.input } : {}) }, {
    executionId: 'resume',
    recording: history.recording,
    openDeferrals: history.openDeferrals,
    priorChildAttempts: history.priorChildAttempts,
    resumeOf: history.lastExecutionId,
  })
  return { result: await handle.done, resumedFrom: history.lastExecutionId }
}

/** Replays a run kept in a `RunStore` from its recording, with no host, into a `replay-NNN` execution the store allocates. */
export async function replayInStore(runId: string, workflow: WorkflowDefinition | WorkflowFunction, options: Omit<RunOptions, 'host'> & { readonly store: RunStore }) {
  const history = await readHistory(options.store, runId)
  const { host: _ignored, ...withoutHost } = options as RunOptions
  const handle = launchRun(workflow, { ...withoutHost, runId, ...(options.input === undefined ? { input: history.input } : {}) }, {
    executionId: 'replay',
    recording: history.recording,
    replayFailures: true,
    resumeOf: history.lastExecutionId,
  })
  return handle.done
}
