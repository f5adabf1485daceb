import { type JournalDamage, type RunView, createRunView } from '@locus/journal'
import { ARTIFACT_KEYS, type ExecutionInfo, type RunStore, artifactLocation } from '@locus/store'
import { RunResultSchema, type RunResultFile } from './run-result-schema.js'
import { type RunSummary, isNothingRecorded, summarizeRunView } from './run-summary.js'

/** The journal problem a summary lists for an execution that recorded nothing. */
export const NOTHING_RECORDED_PROBLEM = 'empty: no run_start line, so nothing was recorded'

/** One execution of a stored run, folded. */
export interface StoredExecution {
  readonly info: ExecutionInfo
  readonly view: RunView
  /** Its `result.json`, or `undefined` while it runs or when it died before writing it. */
  readonly resultFile: RunResultFile | undefined
  /** The valid lines read and folded. */
  readonly linesRead: number
  /** What the journal reader skipped, and why (a torn last line, invalid lines), and an empty journal. */
  readonly problems: readonly string[]
  /**
   * Where its journal is damaged, in line order: an unreadable complete
   * line, or a `seq` gap or repeat (a line lost, or there twice). Each is
   * among {@link problems} too. A torn last line is not damage. Empty for an
   * intact journal and for a store that cannot be damaged this way.
   */
  readonly damage: readonly JournalDamage[]
  /**
   * True when the execution recorded nothing: no `run_start`, no `run_end`
   * and no `result.json` (its process stopped before its first line reached
   * the store).
   */
  readonly nothingRecorded: boolean
  /** The execution as `locus show` summarises it. */
  readonly summary: RunSummary
}

/** A stored run: its root, its resumes in order, its replays apart, and which execution holds its current state. */
export interface StoredRun {
  readonly runId: string
  readonly root: StoredExecution
  /** The root and every resume, in order. */
  readonly executions: readonly StoredExecution[]
  readonly replays: readonly StoredExecution[]
  /** Child runs its scripts spawned (each attempt its own execution), in creation order, grandchildren included. */
  readonly children: readonly StoredExecution[]
  /** The last resume, or the root: the run as it stands now. */
  readonly latest: StoredExecution
  /**
   * One fold of the root's lines and then each resume's, in order: the run's
   * own figures, which add up every execution (retries, attempts and LLM
   * requests before a resume, a park or a takeover; the root's start; the sum
   * of the executions' durations), and the latest execution's end. Replays
   * are apart. Each execution's own figures stay in {@link executions}.
   */
  readonly view: RunView
  /** The run as `locus show`, `ls` and the server's status describe it: {@link view} summarised with the latest execution's result. */
  readonly summary: RunSummary
  /**
   * True when neither the root nor any resume recorded a `run_start`: every
   * journal is empty, so there is no workflow, input or options to resume
   * or replay from.
   */
  readonly nothingRecorded: boolean
}

/** Options of {@link readStoredRun}. */
export interface ReadStoredRunOptions {
  /** `all` keeps every call in each view (a tree, an inspector); `notable` keeps what reports list. @default 'notable' */
  readonly keep?: 'notable' | 'all' | undefined
}

/** Folds one execution's journal and reads its `result.json`. */
export async function readStoredExecution(store: RunStore, info: ExecutionInfo, options: ReadStoredRunOptions = {}): Promise<StoredExecution> {
  const view = createRunView({ keep: options.keep ?? 'notable' })
  const problems: string[] = []
  const damage: JournalDamage[] = []
  let linesRead = 0
  const reading = store.readLines(info, { onProblem: (problem) => problems.push(problem), onDamage: (place) => damage.push(place) })
  for await (const line of reading) {
    view.apply(line)
    linesRead += 1
  }
  const text = await store.readArtifact(info, ARTIFACT_KEYS.result)
  let resultFile: RunResultFile | undefined
  if (text !== undefined) {
    try {
      const parsed = RunResultSchema.safeParse(JSON.parse(text))
      if (parsed.success) resultFile = parsed.data
      else problems.push(`${ARTIFACT_KEYS.result} does not match its schema: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`)
    } catch {
      // A result being written right now, or damaged: the journal still tells the story.
      problems.push(`${ARTIFACT_KEYS.result} is not JSON`)
    }
  }
  const nothingRecorded = isNothingRecorded(view, resultFile)
  if (nothingRecorded) problems.push(NOTHING_RECORDED_PROBLEM)
  const outputsReadme = artifactLocation(info.location, ARTIFACT_KEYS.outputsReadme)
  const resultPath = artifactLocation(info.location, ARTIFACT_KEYS.result)
  return {
    info,
    view,
    resultFile,
    linesRead,
    problems,
    damage,
    nothingRecorded,
    summary: summarizeRunView(view, { resultFile, outputsReadme, resultPath, journalProblems: problems, runId: info.runId, executionId: info.executionId }),
  }
}

/**
 * A run as {@link readStoredRun} would show it, from a fold of its one
 * execution the caller already holds (the live fold in this process, the
 * inspector's model), without reading the store: that execution is its
 * root, its latest and its whole fold. For a run of one root execution that
 * spawned no child (a child's lines, and a resume's earlier executions, are
 * not in one execution's fold alone).
 */
export function heldStoredRun(info: ExecutionInfo, view: RunView): StoredRun {
  const outputsReadme = artifactLocation(info.location, ARTIFACT_KEYS.outputsReadme)
  const resultPath = artifactLocation(info.location, ARTIFACT_KEYS.result)
  const execution: StoredExecution = {
    info,
    view,
    resultFile: undefined,
    linesRead: view.lastSeq + 1,
    problems: [],
    damage: [],
    nothingRecorded: false,
    summary: summarizeRunView(view, { resultFile: undefined, outputsReadme, resultPath, journalProblems: [], runId: info.runId, executionId: info.executionId }),
  }
  return { runId: info.runId, root: execution, executions: [execution], replays: [], children: [], latest: execution, view, summary: execution.summary, nothingRecorded: false }
}

/** The root of a run that exists but whose root execution no worker has created yet: nothing recorded, so its status reads `queued`. */
function queuedRoot(runId: string, storeKind: string, options: ReadStoredRunOptions): StoredExecution {
  const info: ExecutionInfo = { runId, executionId: runId, kind: 'root', location: `${storeKind}:${runId}` }
  const view = createRunView({ keep: options.keep ?? 'notable' })
  const problems = ['queued: no worker has started the run yet']
  return {
    info,
    view,
    resultFile: undefined,
    linesRead: 0,
    problems,
    damage: [],
    nothingRecorded: true,
    summary: summarizeRunView(view, { resultFile: undefined, outputsReadme: '', resultPath: '', journalProblems: problems, runId, executionId: runId }),
  }
}

/**
 * The execution that holds a run's current state among its executions
 * (creation order, root first): the last resume, or the root; replays never.
 */
export function latestExecution(executions: readonly ExecutionInfo[]): ExecutionInfo | undefined {
  return executions.filter((execution) => execution.kind === 'root' || execution.kind === 'resume').at(-1)
}

/** Folds the lines of a run's root and resumes, in order, into one view, summarised with the latest execution's result. */
async function foldRun(store: RunStore, executions: readonly StoredExecution[], latest: StoredExecution, options: ReadStoredRunOptions): Promise<{ view: RunView; summary: RunSummary }> {
  const view = createRunView({ keep: options.keep ?? 'notable' })
  for (const execution of executions) {
    for await (const line of store.readLines(execution.info)) view.apply(line)
  }
  const { info } = latest
  const summary = summarizeRunView(view, {
    resultFile: latest.resultFile,
    outputsReadme: latest.summary.outputsReadme,
    resultPath: latest.summary.resultPath,
    journalProblems: latest.problems,
    runId: info.runId,
    executionId: info.executionId,
  })
  return { view, summary }
}

/**
 * Reads a stored run through any {@link RunStore}: each execution folded into
 * a {@link RunView}, its `result.json`, and its summary. The CLI's `show`,
 * `ls`, `resume` and `replay`, and the server's status, read runs this way.
 *
 * @throws RunNotFoundError when the store has no such run.
 */
export async function readStoredRun(store: RunStore, runId: string, options: ReadStoredRunOptions = {}, listed?: readonly ExecutionInfo[]): Promise<StoredRun> {
  const infos = listed ?? (await store.listExecutions(runId))
  const executions = await Promise.all(infos.map((info) => readStoredExecution(store, info, options)))
  // A run queued for workers (a PostgreSQL run row) has no execution until a worker starts it.
  const root = executions[0] ?? queuedRoot(runId, store.kind, options)
  if (executions.length === 0) executions.push(root)
  const resumes = executions.filter((execution) => execution.info.kind === 'root' || execution.info.kind === 'resume')
  const latest = resumes.at(-1) ?? root
  const { view, summary } = resumes.length > 1 ? await foldRun(store, resumes, latest, options) : latest
  return {
    runId,
    root,
    executions: resumes,
    replays: executions.filter((execution) => execution.info.kind === 'replay'),
    children: executions.filter((execution) => execution.info.kind === 'child'),
    latest,
    view,
    summary,
    nothingRecorded: resumes.every((execution) => execution.view.runStart === undefined),
  }
}

/**
 * True when every execution of a stored run has written its `run_end` and
 * then its `result.json` (the last thing an execution writes): from then on
 * the run changes only by gaining an execution.
 */
function everyExecutionFinished(stored: StoredRun): boolean {
  return [...stored.executions, ...stored.replays, ...stored.children].every((execution) => execution.view.runEnd !== undefined && execution.resultFile !== undefined)
}

/**
 * A reader of stored runs that keeps the fold of a run whose every execution
 * has finished (its `run_end` and its result file written), and serves it
 * again while the store lists the same executions. Sound because journals
 * are append-only and an execution writes nothing after its result: such a
 * run changes only by gaining an execution (a resume of a failed run, a
 * replay), which the listing shows. A store with `executionsToken` spares
 * the listing while its token is unchanged. At most `capacity` runs are
 * kept, the least recently read dropped first.
 */
export function createEndedRunCache(store: RunStore, capacity = 256): (runId: string) => Promise<StoredRun> {
  const kept = new Map<string, { readonly stored: StoredRun; readonly token: string | undefined }>()
  const keep = (runId: string, entry: { readonly stored: StoredRun; readonly token: string | undefined }): void => {
    kept.set(runId, entry)
    if (kept.size > capacity) kept.delete(kept.keys().next().value as string)
  }
  return async (runId) => {
    // Taken before the listing: an execution added after it changes the next token.
    const token = store.executionsToken?.(runId)
    const cached = kept.get(runId)
    if (cached !== undefined) {
      kept.delete(runId)
      // The store vouches that no execution was added since the run was read: no listing.
      if (token !== undefined && token === cached.token) {
        kept.set(runId, cached)
        return cached.stored
      }
    }
    const listed = await store.listExecutions(runId)
    if (cached !== undefined) {
      const ids = [...cached.stored.executions, ...cached.stored.replays, ...cached.stored.children].map((execution) => execution.info.executionId).sort()
      const now = listed.map((info) => info.executionId).sort()
      if (ids.length === now.length && ids.every((id, index) => id === now[index])) {
        keep(runId, { stored: cached.stored, token })
        return cached.stored
      }
    }
    const stored = await readStoredRun(store, runId, {}, listed)
    if (everyExecutionFinished(stored)) keep(runId, { stored, token })
    return stored
  }
}
