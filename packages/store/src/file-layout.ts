import { RunIdError, validateRunId } from '@locus/journal'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'

// The file adapter's on-disk layout. Private to this package: everything
// outside a store names artifacts by key (ARTIFACT_KEYS) and executions by
// ref, never by path, so only the file adapters below know these names.

/** Names of the files and directories inside an execution directory. */
export const RUN_LAYOUT = {
  journal: 'journal.jsonl',
  result: 'result.json',
  outputs: 'outputs',
  outputsReadme: 'README.md',
  calls: 'calls',
  transcript: 'transcript',
  callResult: 'result',
  executions: 'executions',
} as const

/** The directories of one agent call attempt. */
export interface CallPaths {
  dir: string
  transcriptDir: string
  resultDir: string
}

/** Where everything of one execution of a run lives. All paths are absolute. */
export interface RunPaths {
  /** The `.locus-pi/runs` directory. */
  runsDir: string
  storageRootRunId: string
  executionId: string
  /** `<runsDir>/<storageRootRunId>`. */
  rootDir: string
  /** `rootDir` for the root execution; `<rootDir>/executions/<executionId>` for resume attempts and children. */
  executionDir: string
  journalPath: string
  resultPath: string
  outputsDir: string
  outputsReadmePath: string
  /** `<executionDir>/calls/<callId>` with its `transcript` and `result` directories. */
  callDir(callId: string): CallPaths
}

/**
 * The run directory layout. The root execution's outputs live directly in
 * `<runsDir>/<storageRootRunId>/`; a resume attempt or child execution gets
 * the fixed nested directory `<runsDir>/<storageRootRunId>/executions/<executionId>/`
 * with the same layout inside:
 *
 * ```text
 * journal.jsonl  result.json  outputs/README.md  calls/<callId>/{transcript,result}/
 * ```
 *
 * Every id is checked with {@link validateRunId}. Nothing is created on disk.
 *
 * @param runsDir - the `.locus-pi/runs` directory itself (the runtime uses `<cwd>/.locus-pi/runs`).
 * @param executionId - omit, or pass `storageRootRunId`, for the root execution.
 *
 * @example
 * ```ts
 * const paths = runPaths('.locus-pi/runs', 'run-1')
 * paths.journalPath              // /abs/.locus-pi/runs/run-1/journal.jsonl
 * runPaths('.locus-pi/runs', 'run-1', 'resume-1').executionDir
 * // /abs/.locus-pi/runs/run-1/executions/resume-1
 * ```
 */
export function runPaths(runsDir: string, storageRootRunId: string, executionId?: string): RunPaths {
  if (typeof runsDir !== 'string' || runsDir.length === 0) {
    throw new RunIdError('runsDir', runsDir)
  }
  const base = resolve(runsDir)
  const rootId = validateRunId(storageRootRunId, 'storageRootRunId')
  const execution = executionId === undefined ? rootId : validateRunId(executionId, 'executionId')
  const rootDir = inside(base, join(base, rootId), 'storageRootRunId', rootId)
  const executionDir =
    execution === rootId ? rootDir : inside(base, join(rootDir, RUN_LAYOUT.executions, execution), 'executionId', execution)
  const outputsDir = join(executionDir, RUN_LAYOUT.outputs)
  return {
    runsDir: base,
    storageRootRunId: rootId,
    executionId: execution,
    rootDir,
    executionDir,
    journalPath: join(executionDir, RUN_LAYOUT.journal),
    resultPath: join(executionDir, RUN_LAYOUT.result),
    outputsDir,
    outputsReadmePath: join(outputsDir, RUN_LAYOUT.outputsReadme),
    callDir(callId: string): CallPaths {
      const id = validateRunId(callId, 'callId')
      const dir = inside(base, join(executionDir, RUN_LAYOUT.calls, id), 'callId', id)
      return { dir, transcriptDir: join(dir, RUN_LAYOUT.transcript), resultDir: join(dir, RUN_LAYOUT.callResult) }
    },
  }
}

/** A second guard behind the id rule: the joined path must still be below the runs directory. */
function inside(base: string, candidate: string, field: string, id: string): string {
  const fromBase = relative(base, candidate)
  if (fromBase === '' || fromBase === '..' || fromBase.startsWith(`..${sep}`) || isAbsolute(fromBase)) {
    throw new RunIdError(field, id)
  }
  return candidate
}
