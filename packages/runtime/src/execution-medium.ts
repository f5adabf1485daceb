import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type JournalDurability, type JournalLine, type JournalLineInput, RUN_LAYOUT, type RunPaths, createJournalWriter } from '@locus/journal'
import { type ExecutionWriter, type RunStore, createFileRunStore } from '@locus/store'
import { type DeferredAnswerSource, storeAnswerSource } from './deferrals.js'
import { writeJsonAtomic } from './run-state.js'

/** Where one agent attempt's transcript and result envelope go. */
export interface CallOutputs {
  /** A directory a host may write its own files into, when the medium is a disk; undefined otherwise. */
  readonly transcriptDir: string | undefined
  /** What the envelope records as its `paths`: directories on disk, or artifact keys. */
  readonly envelopePaths: { readonly transcriptDir: string; readonly resultDir: string }
  writeTranscript(json: string): void
  /** Written once; a second write of the same call is refused. */
  writeEnvelope(json: string): void
}

/**
 * Where an execution writes: its journal, each call's outputs, `result.json`
 * and the outputs README. The runtime writes only through this, so a run can
 * live in the runs directory or in any `RunStore`.
 */
export interface ExecutionMedium {
  readonly runDir: string
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

/** The runs directory on this disk, in the layout `locus` has always written. */
export function fileMedium(paths: RunPaths, journal: { readonly durability: JournalDurability; readonly onLine: (line: JournalLine) => void }): ExecutionMedium {
  mkdirSync(paths.outputsDir, { recursive: true })
  const writer = createJournalWriter(paths.journalPath, { runId: paths.storageRootRunId, executionId: paths.executionId, durability: journal.durability, onLine: journal.onLine })
  let firstCall = true
  return {
    runDir: paths.rootDir,
    executionDir: paths.executionDir,
    // A look is one readdir of the run's deferred/ directory.
    deferredAnswers: storeAnswerSource(createFileRunStore(paths.runsDir), paths.storageRootRunId, 100),
    append: (line) => writer.append(line),
    flush: () => {
      writer.flush()
    },
    close: () => {
      writer.close()
    },
    prepareCall(callId) {
      const dirs = paths.callDir(callId)
      // Plain mkdirs, with a recursive one only for the first call: metadata operations dominate a call's cost on slow disks.
      if (firstCall) {
        mkdirSync(dirs.dir, { recursive: true })
        firstCall = false
      } else {
        try {
          mkdirSync(dirs.dir)
        } catch {
          mkdirSync(dirs.dir, { recursive: true })
        }
      }
      mkdirSync(dirs.transcriptDir)
      mkdirSync(dirs.resultDir)
      return {
        transcriptDir: dirs.transcriptDir,
        envelopePaths: { transcriptDir: dirs.transcriptDir, resultDir: dirs.resultDir },
        writeTranscript: (json) => {
          writeFileSync(join(dirs.transcriptDir, 'transcript.json'), json)
        },
        // Written once into a fresh directory; a crash mid-write leaves an envelope that replay reports as invalid and re-runs.
        writeEnvelope: (json) => {
          writeFileSync(join(dirs.resultDir, 'result.json'), json, { flag: 'wx' })
        },
      }
    },
    writeResult: (value) => {
      writeJsonAtomic(paths.resultPath, value)
    },
    writeReadme: (markdown) => {
      writeFileSync(paths.outputsReadmePath, markdown)
    },
    settled: () => Promise.resolve(),
  }
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
  const key = (...parts: string[]): string => parts.join('/')
  return {
    runDir: writer.location,
    executionDir: writer.location,
    // A look is one query (or one map read in memory); a quarter second keeps a remote store's load small.
    deferredAnswers: storeAnswerSource(store, writer.runId, 250),
    append: (line) => writer.append(line),
    flush: () => {
      track(writer.flush())
    },
    close: () => {
      track(writer.close())
    },
    prepareCall(callId) {
      const transcriptKey = key(RUN_LAYOUT.calls, callId, RUN_LAYOUT.transcript)
      const resultKey = key(RUN_LAYOUT.calls, callId, RUN_LAYOUT.callResult)
      return {
        transcriptDir: undefined,
        envelopePaths: { transcriptDir: transcriptKey, resultDir: resultKey },
        writeTranscript: (json) => {
          track(writer.artifacts.write(key(transcriptKey, 'transcript.json'), json))
        },
        writeEnvelope: (json) => {
          track(writer.artifacts.write(key(resultKey, 'result.json'), json, { exclusive: true }))
        },
      }
    },
    writeResult: (value) => {
      track(writer.artifacts.write(RUN_LAYOUT.result, JSON.stringify(value, null, 2) + '\n'))
    },
    writeReadme: (markdown) => {
      track(writer.artifacts.write(key(RUN_LAYOUT.outputs, RUN_LAYOUT.outputsReadme), markdown))
    },
    async settled() {
      await Promise.all(pending)
    },
    beforeDispatch: writer.beforeDispatch === undefined ? undefined : () => (writer.beforeDispatch as () => Promise<void>).call(writer),
  }
}
