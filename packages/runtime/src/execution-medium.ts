import type { JournalLine, JournalLineInput } from '@locus/journal'
import { ARTIFACT_KEYS, type ExecutionWriter, type RunStore } from '@locus/store'
import { type DeferredAnswerSource, storeAnswerSource } from './deferrals.js'

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
}

/**
 * An execution opened in a `RunStore`: lines through its sink, everything else
 * as artifacts by key. Artifact writes are asynchronous; the execution waits
 * for them with `settled()` before it reports its end.
 */
export function storeMedium(writer: ExecutionWriter, store: RunStore): ExecutionMedium {
  const pending: Promise<void>[] = []
  const track = (write: Promise<void>): void => {
    pending.push(write)
    write.catch(() => undefined)
  }
  return {
    runDir: writer.runLocation,
    executionDir: writer.location,
    // A look is one query, one readdir or one map read; a quarter second keeps a remote store's load small.
    deferredAnswers: storeAnswerSource(store, writer.runId, store.kind === 'file' ? 100 : 250),
    append: (line) => writer.append(line),
    flush: () => {
      track(writer.flush())
    },
    close: () => {
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
