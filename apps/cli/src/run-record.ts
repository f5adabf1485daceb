import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { type JournalLine, type JournalReadResult, RUN_LAYOUT, RunIdError, readJournal, runPaths, validateRunId } from '@locus/journal'
import { type JsonValue, RUN_DISPOSITIONS, type RunDisposition } from '@locus/outcome'
import { RESUME_EXECUTION_PREFIX } from '@locus/runtime'
import { RunNotFoundError } from '@locus/store'

/** A run's `result.json`, as far as `locus` reads it. */
export interface RunResultFile {
  readonly disposition: RunDisposition
  readonly ok: boolean
  readonly result: JsonValue
  readonly error?: { readonly name?: string; readonly message?: string } | undefined
  readonly startedAt?: string
  readonly endedAt?: string
}

/** One execution of a run on disk: the root run, a resume, or a replay. */
export interface ExecutionRecord {
  readonly executionId: string
  readonly kind: 'root' | 'resume' | 'replay'
  readonly dir: string
  readonly journalPath: string
  readonly outputsReadmePath: string
  /** Where the execution's `result.json` is (or will be). */
  readonly resultPath: string
  readonly journal: JournalReadResult
  /** `undefined` while the execution runs, or when it died before writing its result. */
  readonly result: RunResultFile | undefined
}

/** A run on disk with its executions, the root first and resumes in order. */
export interface RunRecord {
  readonly runId: string
  readonly rootDir: string
  readonly root: ExecutionRecord
  /** Root and resume executions, in order; replays are kept apart. */
  readonly executions: readonly ExecutionRecord[]
  readonly replays: readonly ExecutionRecord[]
  /** The execution whose outcome is the run's current state: the last resume, or the root. */
  readonly latest: ExecutionRecord
}

function readResultFile(path: string): RunResultFile | undefined {
  if (!existsSync(path)) return undefined
  try {
    const value = JSON.parse(readFileSync(path, 'utf8')) as Partial<RunResultFile>
    if (typeof value.disposition !== 'string' || !(RUN_DISPOSITIONS as readonly string[]).includes(value.disposition)) return undefined
    return value as RunResultFile
  } catch {
    // A result being written right now, or damaged: the journal still tells the story.
    return undefined
  }
}

function readExecution(runsDir: string, runId: string, executionId: string | undefined): ExecutionRecord {
  const paths = runPaths(runsDir, runId, executionId)
  const kind = executionId === undefined ? 'root' : executionId.startsWith(RESUME_EXECUTION_PREFIX) ? 'resume' : 'replay'
  return {
    executionId: paths.executionId,
    kind,
    dir: paths.executionDir,
    journalPath: paths.journalPath,
    outputsReadmePath: paths.outputsReadmePath,
    resultPath: paths.resultPath,
    journal: readJournal(paths.journalPath),
    result: readResultFile(paths.resultPath),
  }
}

/** True when `<runsDir>/<runId>/journal.jsonl` exists. */
export function runExists(runsDir: string, runId: string): boolean {
  try {
    return existsSync(runPaths(runsDir, runId).journalPath)
  } catch (error) {
    if (RunIdError.isInstance(error)) return false
    throw error
  }
}

/**
 * Reads a run from its directory: the root execution, every resume and
 * replay, and which execution holds the run's current state.
 *
 * @throws {RunIdError} `RUN_ID_INVALID`, stating the id rule, when `runId` could not name a run
 *   (`../x`, `/etc`, an empty id): the same rule `locus run --run-id` applies.
 * @throws {RunNotFoundError} (`RUN_NOT_FOUND`, from @locus/store) when there is no such run in `runsDir`.
 */
export function readRunRecord(runsDir: string, runId: string): RunRecord {
  validateRunId(runId, 'run id')
  if (!runExists(runsDir, runId)) {
    throw new RunNotFoundError(runId, `${runsDir} (pass --runs-dir for another directory)`)
  }
  const root = readExecution(runsDir, runId, undefined)
  const executionsDir = join(runPaths(runsDir, runId).rootDir, RUN_LAYOUT.executions)
  const nested = existsSync(executionsDir)
    ? readdirSync(executionsDir)
        .filter((name) => existsSync(join(executionsDir, name, RUN_LAYOUT.journal)))
        .sort()
    : []
  const nestedRecords = nested.map((executionId) => readExecution(runsDir, runId, executionId))
  const executions = [root, ...nestedRecords.filter((execution) => execution.kind === 'resume')]
  return {
    runId,
    rootDir: runPaths(runsDir, runId).rootDir,
    root,
    executions,
    replays: nestedRecords.filter((execution) => execution.kind === 'replay'),
    latest: executions.at(-1) ?? root,
  }
}

/** The ids of the runs in a directory, newest first (run ids sort by start time; ties by modification time). */
export function listRunIds(runsDir: string): string[] {
  if (!existsSync(runsDir)) return []
  const ids = readdirSync(runsDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && runExists(runsDir, entry.name))
    .map((entry) => ({ id: entry.name, modified: statSync(join(runsDir, entry.name, RUN_LAYOUT.journal)).mtimeMs }))
  return ids.sort((left, right) => right.modified - left.modified || (left.id < right.id ? 1 : left.id > right.id ? -1 : 0)).map((entry) => entry.id)
}

/** The first line of a journal of the given type. */
export function firstLineOf<TType extends JournalLine['type']>(lines: readonly JournalLine[], type: TType): Extract<JournalLine, { type: TType }> | undefined {
  return lines.find((line): line is Extract<JournalLine, { type: TType }> => line.type === type)
}
