import { LocusError, hasLocusErrorCode } from '@locus/outcome'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'

export const RUN_ID_INVALID = 'RUN_ID_INVALID'

/** Letters, digits, `.`, `_` and `-`, starting with a letter or digit, at most 128 characters. */
const RUN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

/** The rule a run, execution or call id must follow, as quoted in error messages. */
export const RUN_ID_RULE =
  '1 to 128 characters, letters, digits, ".", "_" and "-" only, starting with a letter or digit (no "/", "\\", ".." or spaces)'

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

/** An id that would not stay inside its directory (or is not a usable directory name). */
export class RunIdError extends LocusError {
  declare readonly code: typeof RUN_ID_INVALID
  /** The refused id. */
  readonly id: string
  /** Which id it was: `storageRootRunId`, `executionId` or `callId`. */
  readonly field: string

  constructor(field: string, id: unknown) {
    const shown = typeof id === 'string' ? JSON.stringify(id) : `a ${id === null ? 'null' : typeof id}`
    super(`Invalid ${field} ${shown}: ids name directories under the runs directory, so they must be ${RUN_ID_RULE}.`, {
      code: RUN_ID_INVALID,
    })
    this.name = 'RunIdError'
    this.id = typeof id === 'string' ? id : String(id)
    this.field = field
  }

  static override isInstance(value: unknown): value is RunIdError {
    return hasLocusErrorCode(value, RUN_ID_INVALID)
  }
}

/**
 * Returns `id` when it is safe as a single directory name under the runs
 * directory, and throws {@link RunIdError} (code `RUN_ID_INVALID`) otherwise.
 * No accepted id can reach outside its parent: separators, `..`, absolute
 * paths, NUL bytes and empty ids are all refused.
 *
 * @example
 * ```ts
 * validateRunId('run-2026-09-22.1') // => 'run-2026-09-22.1'
 * validateRunId('../etc')            // throws RunIdError
 * ```
 */
export function validateRunId(id: string, field = 'run id'): string {
  if (typeof id !== 'string' || !RUN_ID_PATTERN.test(id)) throw new RunIdError(field, id)
  return id
}

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
