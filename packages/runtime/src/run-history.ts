import { type UsdAmount, Usd, zeroUsd } from '@locus/cost'
import { type JournalLine, type RunEndLine, type RunStartLine, type RunView, createRunView } from '@locus/journal'
import type { JsonValue } from '@locus/outcome'
import { type LoadedRecording, type Recording, type SkippedCall, createRecordingBuilder, mergeRecordings } from '@locus/replay'
import { ARTIFACT_KEYS, type ExecutionInfo, type RunStore, RunNotFoundError } from '@locus/store'
import { type RecordedRunOptions, recordedRunOptions } from './recorded-options.js'
import type { RecordedDeferral, RecordedTimer } from './run-state.js'

/**
 * What a resume carries over from the journals of earlier executions, seen a
 * line at a time, besides the run view's fold (deferrals are that fold's):
 * the spawn attempts started at each ordinal (a spawn run again numbers its
 * next attempt, and names its next child execution, after them) and each
 * timer's due time.
 */
function carryOver(): {
  see: (line: JournalLine) => void
  result: () => { priorChildAttempts: Map<string, number>; timers: Map<string, RecordedTimer> }
} {
  const priorChildAttempts = new Map<string, number>()
  const timers = new Map<string, RecordedTimer>()
  return {
    see: (line) => {
      if (line.type === 'child_start') priorChildAttempts.set(line.ordinal, Math.max(priorChildAttempts.get(line.ordinal) ?? 0, line.attempt))
      // The first start of a timer fixes its due time; a resume that started it again kept the same one.
      else if (line.type === 'timer_start' && !timers.has(line.timerId)) timers.set(line.timerId, { dueAt: Date.parse(line.dueAt) })
      else if (line.type === 'timer_fired') {
        const started = timers.get(line.timerId)
        if (started !== undefined) timers.set(line.timerId, { ...started, fired: { firedAt: Date.parse(line.firedAt), lateMs: line.lateMs } })
      }
    },
    result: () => ({ priorChildAttempts, timers }),
  }
}

/**
 * What earlier executions spent, seen a line at a time: each live agent
 * attempt's `agent_end.cost`, or, for an attempt killed before its terminal
 * line, the `llm_attempt` costs it journaled. Replayed lines carry no cost,
 * so nothing is counted twice.
 */
function costTally(): { see: (line: JournalLine) => void; spent: () => UsdAmount } {
  const requests = new Map<string, UsdAmount>()
  const ended = new Map<string, UsdAmount>()
  const usdOf = (cost: { readonly usd?: string } | undefined): UsdAmount | undefined => (cost?.usd === undefined ? undefined : new Usd(cost.usd))
  return {
    see: (line) => {
      if (line.type === 'llm_attempt') {
        const usd = usdOf(line.cost as { readonly usd?: string } | undefined)
        if (usd !== undefined) requests.set(line.callId, (requests.get(line.callId) ?? zeroUsd()).add(usd))
      } else if (line.type === 'agent_end' && line.replayed !== true) {
        const usd = usdOf(line.cost)
        if (usd !== undefined) ended.set(line.callId, usd)
      }
    },
    spent: () => {
      let total = zeroUsd()
      for (const usd of ended.values()) total = total.add(usd)
      for (const [callId, usd] of requests) if (!ended.has(callId)) total = total.add(usd)
      return total
    },
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
  /** Every deferral opened, by id: its first deadline, and the `deferred_expired` line once its deadline passed. */
  readonly deferrals: ReadonlyMap<string, RecordedDeferral>
  /** Spawn attempts started per ordinal: a spawn run again numbers its next attempt after them. */
  readonly priorChildAttempts: ReadonlyMap<string, number>
  /** The `sleep()` timers the journals hold, by timer id: a resume serves a fired one from the journal and waits out the rest of an unfired one. */
  readonly timers: ReadonlyMap<string, RecordedTimer>
  /** Calls the journals hold that the recording left out, and why (they run live again). */
  readonly skipped: readonly SkippedCall[]
  /** Dollars the run's executions (its root, every resume and their child runs) spent: a resume's cost budget counts them as spent. */
  readonly spentUsd: UsdAmount
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
  const cost = costTally()
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
      cost.see(line)
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
  // Child runs spend from their root's budget: their journals count too.
  for (const info of executions.filter((execution) => execution.kind === 'child')) {
    for await (const line of store.readLines(info)) cost.see(line)
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
    // Opened and never settled: a resume waits on them under the same ids. The run view's fold, the one every reader uses.
    openDeferrals: view.openDeferrals().map((deferral) => deferral.deferredId),
    deferrals: recordedDeferrals(view),
    skipped: recordings.flatMap((recording) => recording.skipped),
    spentUsd: cost.spent(),
    view,
  }
}

/** Each deferral's deadline as first journaled (a resume waits out what is left of it) and its expiry once journaled, from the run view's fold. */
function recordedDeferrals(view: RunView): Map<string, RecordedDeferral> {
  const recorded = new Map<string, RecordedDeferral>()
  for (const [deferredId, { open, expired }] of view.deferrals()) {
    recorded.set(deferredId, { expiresAt: open.expiresAt === null ? null : Date.parse(open.expiresAt), ...(expired === undefined ? {} : { expired }) })
  }
  return recorded
}

/** The recorded options, or none when a `run_start` recorded options this runtime cannot read. */
function optionsOf(runStart: RunStartLine | undefined): RecordedRunOptions {
  try {
    return recordedRunOptions(runStart)
  } catch {
    return recordedRunOptions(undefined)
  }
}
