import type { JournalLine, JournalLineInput } from '@locus/journal'
import type { RetryClock } from '@locus/retry'
import { ARTIFACT_KEYS, type ExecutionWriter, type RunStore, type RunStreams, type StreamKey, type StreamWriter, createStreamWriter, streamKeyOf } from '@locus/store'
import { type DeferredAnswerSource, storeAnswerSource } from './deferrals.js'
import type { TurnTextEvent } from './host.js'

/**
 * Where an execution's agent calls stream their answer text: the run's token
 * stream in the store, keyed by (execution, callId, attempt, LLM attempt).
 */
export interface CallStreams {
  /** One text event of an attempt's session, as the host reported it. */
  text(callId: string, attempt: number, event: TurnTextEvent): void
  /**
   * Closes an attempt's requests once the attempt is over: each still open is
   * ended when the attempt answered; when it did not, every request of it is
   * discarded with the attempt's failure cause, even those that had ended.
   */
  closeAttempt(callId: string, attempt: number, cause: string | undefined): void
  /**
   * Before a call runs live in a resumed execution (a resume, or a takeover
   * of a run whose worker died): discards, with cause `superseded`, every
   * request an earlier execution streamed for the same logical call and did
   * not discard. That text never became the call's answer (the call had no
   * journaled end, or it would replay), so a client must see it thrown away
   * even when the process that streamed it died before it could say so.
   * Undefined (nothing to wait for) in a root execution.
   */
  supersede(logicalCallId: string): Promise<void> | undefined
  /** The stream writer, for its write count. */
  readonly writer: StreamWriter
}

/** Where a host writes what it keeps of one call attempt (its own transcript files): by name, under the attempt's transcript key. */
export interface ArtifactSink {
  /** Writes one artifact whole under `name` (letters, digits, ".", "_", "-" and "/"); a later write of the same name replaces it. */
  write(name: string, text: string): void
}

/** Where one agent attempt's transcript and result envelope go. */
export interface CallOutputs {
  /** Where the host writes artifacts of its own for this attempt. */
  readonly artifacts: ArtifactSink
  /** What the envelope records as its `paths`: the artifact keys of the attempt's transcript and result. */
  readonly envelopePaths: { readonly transcriptDir: string; readonly resultDir: string }
  writeTranscript(json: string): void
  /** Written once; a second write of the same call is refused. */
  writeEnvelope(json: string): void
}

/**
 * Where an execution writes: its journal, each call's outputs, `result.json`
 * and the outputs README, all through one `RunStore` execution (the runs
 * directory is the file store's). The runtime writes only through this.
 */
export interface ExecutionMedium {
  /** Where a person finds the run (the root execution): for messages and results, never parsed. */
  readonly runDir: string
  /** Where a person finds this execution. */
  readonly executionDir: string
  /** Where a person finds this execution's journal. */
  readonly journalLocation: string
  /** Where answers to the run's deferrals given from another process are kept. */
  readonly deferredAnswers: DeferredAnswerSource
  append(line: JournalLineInput): JournalLine
  flush(): void
  close(): void
  prepareCall(callId: string): CallOutputs
  writeResult(value: unknown): void
  writeReadme(markdown: string): void
  /** Resolves when every write handed to an asynchronous store has landed; rejects with the first that failed. */
  settled(): Promise<void>
  /** The writer's `beforeDispatch`, when it has one: awaited between a call's start line and its dispatch. */
  readonly beforeDispatch?: (() => Promise<void>) | undefined
  /** The run's token stream, when the store keeps one (a replay streams nothing). */
  readonly streams?: CallStreams | undefined
}

/** The schedule of a stream writer on the run's clock: a sleep that a cancel aborts. */
function scheduleOn(clock: RetryClock): (fire: () => void, ms: number) => () => void {
  return (fire, ms) => {
    const controller = new AbortController()
    clock.sleep(ms, controller.signal).then(
      () => {
        if (!controller.signal.aborted) fire()
      },
      () => undefined,
    )
    return () => {
      controller.abort()
    }
  }
}

/** The cause of a `discarded` record that {@link CallStreams.supersede} writes. */
const SUPERSEDED_CAUSE = 'superseded'

/** The logical call of an attempt's call id (`<logicalCallId>-a<attempt>`). */
function logicalCallOf(callId: string): string {
  const at = callId.lastIndexOf('-a')
  return at < 0 ? callId : callId.slice(0, at)
}

/** Reads a run's whole stream (a page at a time): each request another execution streamed and did not discard, by logical call. */
async function undiscardedElsewhere(streams: RunStreams, runId: string, executionId: string): Promise<Map<string, StreamKey[]>> {
  const states = new Map<string, { key: StreamKey; discarded: boolean }>()
  let after = -1
  for (;;) {
    const read = await streams.read(runId, { after, limit: 1000 })
    for (const record of read.records) {
      if (record.executionId === executionId) continue
      const id = streamKeyOf(record)
      const entry = states.get(id) ?? { key: { executionId: record.executionId, callId: record.callId, attempt: record.attempt, llmAttempt: record.llmAttempt }, discarded: false }
      if (record.kind === 'discarded') entry.discarded = true
      states.set(id, entry)
    }
    const last = read.records.at(-1)
    if (last === undefined) break
    after = last.offset
  }
  const byCall = new Map<string, StreamKey[]>()
  for (const { key, discarded } of states.values()) {
    if (discarded) continue
    const logical = logicalCallOf(key.callId)
    byCall.set(logical, [...(byCall.get(logical) ?? []), key])
  }
  return byCall
}

function callStreams(writer: StreamWriter, executionId: string, earlier: (() => Promise<Map<string, StreamKey[]>>) | undefined): CallStreams {
  const keyOf = (callId: string, attempt: number, llmAttempt: number): StreamKey => ({ executionId, callId, attempt, llmAttempt })
  let found: Promise<Map<string, StreamKey[]>> | undefined
  return {
    writer,
    supersede(logicalCallId) {
      if (earlier === undefined) return undefined
      // One read of the stream per execution; a read that fails leaves the earlier text as it was (the stream is a view).
      found ??= earlier().catch(() => new Map<string, StreamKey[]>())
      return found.then((byCall) => {
        const keys = byCall.get(logicalCallId)
        if (keys === undefined) return
        byCall.delete(logicalCallId)
        for (const key of keys) writer.discard(key, SUPERSEDED_CAUSE)
      })
    },
    text(callId, attempt, event) {
      const key = keyOf(callId, attempt, event.llmAttempt)
      if (event.kind === 'delta') writer.delta(key, event.text)
      else if (event.kind === 'end') writer.end(key)
      else writer.discard(key, event.cause)
    },
    closeAttempt(callId, attempt, cause) {
      const keys = writer.openKeys((key) => key.callId === callId && key.attempt === attempt)
      for (const key of keys) {
        if (cause === undefined) writer.end(key)
        else writer.discard(key, cause)
      }
    },
  }
}

/**
 * An execution opened in a `RunStore`: lines through its sink, everything else
 * as artifacts by key. Artifact writes are asynchronous; the execution waits
 * for them with `settled()` before it reports its end.
 */
export function storeMedium(writer: ExecutionWriter, store: RunStore, clock?: RetryClock): ExecutionMedium {
  const pending: Promise<void>[] = []
  const track = (write: Promise<void>): void => {
    pending.push(write)
    write.catch(() => undefined)
  }
  const streamWriter =
    store.streams === undefined || writer.kind === 'replay'
      ? undefined
      : createStreamWriter(store.streams, writer.runId, clock === undefined ? {} : { now: () => clock.now(), schedule: scheduleOn(clock) })
  const runStreams = store.streams
  // Only a resumed execution can meet text an earlier execution streamed and never closed (its process died).
  const earlier = runStreams === undefined || writer.kind !== 'resume' ? undefined : () => undiscardedElsewhere(runStreams, writer.runId, writer.executionId)
  const streams = streamWriter === undefined ? undefined : callStreams(streamWriter, writer.executionId, earlier)
  // The stream is a view for people watching: its writes are waited for, never a reason for the run to fail.
  const trackStream = (write: Promise<void>): void => {
    pending.push(write.catch(() => undefined))
  }
  return {
    streams,
    runDir: writer.runLocation,
    executionDir: writer.location,
    journalLocation: writer.journalLocation ?? writer.location,
    // A look is one query, one readdir or one map read; a quarter second keeps a remote store's load small.
    deferredAnswers: storeAnswerSource(store, writer.runId, store.kind === 'file' ? 100 : 250),
    append: (line) => {
      const written = writer.append(line)
      // The run's end starts its stream's retention; a child's end is not the run's.
      if (written.type === 'run_end' && streamWriter !== undefined && store.streams !== undefined && writer.kind !== 'child') {
        const runStreams = store.streams
        trackStream(streamWriter.flush().then(() => runStreams.end(writer.runId, Date.parse(written.ts))))
      }
      return written
    },
    flush: () => {
      track(writer.flush())
      if (streamWriter !== undefined) trackStream(streamWriter.flush())
    },
    close: () => {
      if (streamWriter !== undefined) trackStream(streamWriter.flush())
      track(writer.close())
    },
    prepareCall(callId) {
      const transcriptKey = ARTIFACT_KEYS.callTranscript(callId)
      return {
        artifacts: {
          write: (name, text) => {
            track(writer.artifacts.write(`${transcriptKey}/${name}`, text))
          },
        },
        envelopePaths: { transcriptDir: transcriptKey, resultDir: ARTIFACT_KEYS.callResult(callId) },
        writeTranscript: (json) => {
          track(writer.artifacts.write(ARTIFACT_KEYS.callTranscriptFile(callId), json))
        },
        // Written once; a crash mid-write leaves an envelope that replay reports as invalid and re-runs.
        writeEnvelope: (json) => {
          track(writer.artifacts.write(ARTIFACT_KEYS.callEnvelope(callId), json, { exclusive: true }))
        },
      }
    },
    writeResult: (value) => {
      track(writer.artifacts.write(ARTIFACT_KEYS.result, JSON.stringify(value, null, 2) + '\n'))
    },
    writeReadme: (markdown) => {
      track(writer.artifacts.write(ARTIFACT_KEYS.outputsReadme, markdown))
    },
    async settled() {
      await Promise.all(pending)
    },
    beforeDispatch: writer.beforeDispatch === undefined ? undefined : () => (writer.beforeDispatch as () => Promise<void>).call(writer),
  }
}
