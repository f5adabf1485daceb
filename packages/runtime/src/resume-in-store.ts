import type { JournalLine } from '@locus/journal'
import type { JsonValue } from '@locus/outcome'
import { mergeRecordings, recordingFromLines } from '@locus/replay'
import { type ExecutionInfo, type RunStore, RunNotFoundError } from '@locus/store'
import type { WorkflowDefinition } from './define.js'
import type { RunOptions } from './run-options.js'
import { type WorkflowFunction, launchRun } from './run-workflow-script.js'

/** What a resume or replay reads of a run kept in a store: its executions' lines, oldest first. */
interface StoredHistory {
  readonly runId: string
  readonly input: JsonValue | undefined
  readonly lastExecutionId: string
  /** The root execution and every resume, with their lines; replays and child runs are not part of the run's history. */
  readonly sources: readonly { readonly info: ExecutionInfo; readonly lines: readonly JournalLine[] }[]
}

async function readHistory(store: RunStore, runId: string): Promise<StoredHistory> {
  const executions = await store.listExecutions(runId)
  if (executions.length === 0) throw new RunNotFoundError(runId, `the ${store.kind} store`)
  const sources: { info: ExecutionInfo; lines: JournalLine[] }[] = []
  for (const info of executions.filter((execution) => execution.kind === 'root' || execution.kind === 'resume')) {
    const lines: JournalLine[] = []
    for await (const line of store.readLines(info)) lines.push(line)
    if (lines.length > 0) sources.push({ info, lines })
  }
  const root = sources.find((source) => source.info.kind === 'root')
  if (root === undefined) throw new RunNotFoundError(runId, `the ${store.kind} store (it holds no root execution with a journal)`)
  const start = root.lines.find((line) => line.type === 'run_start')
  return {
    runId,
    input: start?.type === 'run_start' ? start.input : undefined,
    lastExecutionId: sources.at(-1)?.info.executionId ?? runId,
    sources,
  }
}

function recordingOf(history: StoredHistory) {
  return mergeRecordings(history.sources.map((source) => recordingFromLines(source.lines, source.info.location)))
}

/** Deferrals opened and never settled, and the spawn attempts started at each ordinal, as a resume carries them over. */
function carriedOver(history: StoredHistory): { openDeferrals: string[]; priorChildAttempts: Map<string, number> } {
  const open = new Set<string>()
  const priorChildAttempts = new Map<string, number>()
  for (const source of history.sources) {
    for (const line of source.lines) {
      if (line.type === 'deferred_open') open.add(line.deferredId)
      else if (line.type === 'deferred_settled') open.delete(line.deferredId)
      else if (line.type === 'child_start') priorChildAttempts.set(line.ordinal, Math.max(priorChildAttempts.get(line.ordinal) ?? 0, line.attempt))
    }
  }
  return { openDeferrals: [...open], priorChildAttempts }
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
  const carried = carriedOver(history)
  const handle = launchRun(workflow, { ...options, runId, ...(options.input === undefined ? { input: history.input } : {}) }, {
    executionId: 'resume',
    recording: recordingOf(history),
    openDeferrals: carried.openDeferrals,
    priorChildAttempts: carried.priorChildAttempts,
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
    recording: recordingOf(history),
    replayFailures: true,
    resumeOf: history.lastExecutionId,
  })
  return handle.done
}
