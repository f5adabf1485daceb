import { type JournalLine, type RunEndLine, type RunStartLine, type RunView, createRunView } from '@locus/journal'
import type { JsonValue } from '@locus/outcome'
import { type LoadedRecording, type Recording, type SkippedCall, createRecordingBuilder, mergeRecordings } from '@locus/replay'
import { ARTIFACT_KEYS, type ExecutionInfo, type RunStore, RunNotFoundError } from '@locus/store'
import { type RecordedRunOptions, recordedRunOptions } from './recorded-options.js'

/**
 * What a resume carries over from the journals of earlier executions, seen a
 * line at a time: deferrals opened and never settled (it waits on them under
 * the same ids), and the spawn attempts started at each ordinal (a spawn run
 * again numbers its next attempt, and names its next child execution, after
 * them).
 */
function carryOver(): { see: (line: JournalLine) => void; result: () => { openDeferrals: string[]; priorChildAttempts: Map<string, number> } } {
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

/** A stored run's history as resume, replay and the deploy check read it: its root and every resume, oldest first. */
export interface RunHistory {
  readonly runId: string
  /** The merged recording of the root execution and every resume (a later execution's answer for an ordinal wins); replays and child runs are not part of it. */
  readonly recording: Recording
  /** The root's `run_start`, undefined when its journal holds none. */
  readonly runStart: RunStartLine | undefined
  /** The input the run was started with, as recorded. */
  readonly input: JsonValue | undefined
  /** The options the run was started with, as recorded (budgets, host settings, ...). */
  readonly options: RecordedRunOptions
  /** The last execution that wrote a line: what a resume continues from. */
  readonly lastExecution: ExecutionInfo
  /** That execution's `run_end`, when it wrote one. */
  readonly lastRunEnd: RunEndLine | undefined
  /** Deferrals opened and not settled: a resume waits on them under the same ids. */
  readonly openDeferrals: readonly string[]
  /** Spawn attempts started per ordinal: a spawn run again numbers its next attempt after them. */
  readonly priorChildAttempts: ReadonlyMap<string, number>
  /** Calls the journals hold that the recording left out, and why (they run live again). */
  readonly skipped: readonly SkippedCall[]
  /** The root's and every resume's lines folded in order: what a resume goes on folding, so its cost is the run's. */
  readonly view: RunView
}

/**
 * Reads a stored run's history once, each execution streamed: the one reader
 * that resume, replay and the deploy check share, on any store. A call whose
 * answer is not on its journal lines (its host threw, or an older journal's
 * `agent_end` lacks the answer) is recorded from its result envelope, read as
 * the store's artifact `ARTIFACT_KEYS.callEnvelope(callId)`; envelopes of runs
 * recorded before envelopes named keys (they held paths) read the same way.
 *
 * A run whose journals are empty has an empty history (no recording, no
 * `runStart`), so a resume runs everything live.
 *
 * @throws RunNotFoundError when the store holds no such run
 */
export async function readRunHistory(store: RunStore, runId: string): Promise<RunHistory> {
  const executions = await store.listExecutions(runId)
  const carried = carryOver()
  const recordings: LoadedRecording[] = []
  let runStart: RunStartLine | undefined
  let lastExecution: ExecutionInfo | undefined
  let lastRunEnd: RunEndLine | undefined
  const view = createRunView()
  for (const info of executions.filter((execution) => execution.kind === 'root' || execution.kind === 'resume')) {
    const builder = createRecordingBuilder(info.location)
    let lines = 0
    let runEnd: RunEndLine | undefined
    for await (const line of store.readLines(info)) {
      lines += 1
      if (info.kind === 'root' && line.type === 'run_start') runStart ??= line
      else if (line.type === 'run_end') runEnd = line
      builder.add(line)
      carried.see(line)
      view.apply(line)
    }
    if (lines === 0) continue
    const envelopes = new Map<string, string>()
    for (const callId of builder.envelopesWanted()) {
      const text = await store.readArtifact(info, ARTIFACT_KEYS.callEnvelope(callId))
      if (text !== undefined) envelopes.set(callId, text)
    }
    recordings.push(builder.finish((callId) => envelopes.get(callId)))
    lastExecution = info
    lastRunEnd = runEnd
  }
  // A run whose journals hold nothing (killed before its first line) has an empty history: a resume runs it all live.
  lastExecution ??= executions.find((execution) => execution.kind === 'root')
  if (lastExecution === undefined) throw new RunNotFoundError(runId, `the ${store.kind} store (it holds no root execution)`)
  return {
    runId,
    recording: mergeRecordings(recordings),
    runStart,
    input: runStart?.input,
    options: optionsOf(runStart),
    lastExecution,
    lastRunEnd,
    ...carried.result(),
    skipped: recordings.flatMap((recording) => recording.skipped),
    view,
  }
}

/** The recorded options, or none when a `run_start` recorded options this runtime cannot read. */
function optionsOf(runStart: RunStartLine | undefined): RecordedRunOptions {
  try {
    return recordedRunOptions(runStart)
  } catch {
    return recordedRunOptions(undefined)
  }
}
