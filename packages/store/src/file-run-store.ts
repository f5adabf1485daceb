import {
  type JournalDamage,
  type JournalLine,
  createJournalWriter,
  parseJournalLine,
  JournalReadError,
  journalDamage,
  readJournalLines,
  validateRunId,
} from '@locus/journal'
import { randomBytes } from 'node:crypto'
import { type Dirent, mkdirSync, statSync } from 'node:fs'
import { link, mkdir, open, readFile, readdir, rename, stat, unlink, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { RUN_LAYOUT, runPaths } from './file-layout.js'
import { createFileScheduleStore } from './schedule-store.js'
import { acquireRunLock } from './file-owner-lock.js'
import { fileIdempotencyIndex } from './file-idempotency.js'
import { allocatedExecutionId, isAllocatedKind, kindOfExecutionId } from './execution-ids.js'
import { pollUntil, settle } from './poll.js'
import { boundedWrites, writesInIssueOrder } from './key-order.js'
import { LiveRows } from './live-rows.js'
import { createFileRowIndex } from './file-row-index.js'
import { type ListRunRowsFilter, type RunRow, type RunRowPage, newRunRow, parseRunRow, rowFromLines } from './run-rows.js'
import { createFileStreams } from './file-streams.js'
import { streamRetentionOf } from './stream-store.js'
import type {
  ArtifactWriter,
  CreateExecutionOptions,
  ExecutionInfo,
  ExecutionKind,
  ExecutionRef,
  ExecutionWriter,
  ListRunsFilter,
  Ownership,
  ReadLinesOptions,
  RunInfo,
  RunStore,
  TailOptions,
} from './run-store.js'
import {
  ArtifactExistsError,
  ExecutionExistsError,
  RunExistsError,
  RunNotFoundError,
  StoreOptionsError,
  validateArtifactKey,
  validateDeferredId,
} from './store-errors.js'

/** The directory of a run that holds the answers to its deferrals, one `<deferredId>.json` each. */
export const DEFERRED_ANSWERS_DIR = 'deferred'

/** A run's summary row, beside its root journal (rebuilt from the journals when missing or damaged). */
export const RUN_ROW_FILE = 'run.json'

/**
 * How long ago a run's directories must have changed for their change time to
 * vouch for the next change (see `executionsToken`): well past a file
 * system's timestamp tick, with room for a network file system's clock to
 * differ from this machine's.
 */
const RACY_MS = 1_000

/** Options of {@link createFileRunStore}. */
export interface FileRunStoreOptions {
  /** How often a tail looks for new lines, in milliseconds. @default 25 */
  readonly tailPollMs?: number | undefined
  /** How long a run's token stream is kept after the run ends, in milliseconds. @default 7 days */
  readonly streamRetention?: number | undefined
}

/**
 * The embedded default: every execution is a directory under `runsDir`, in
 * the layout `locus` has always written (`<runId>/journal.jsonl`,
 * `result.json`, `outputs/README.md`, `calls/<callId>/...`, and
 * `executions/<executionId>/` with the same inside), so runs written before
 * the store existed stay readable.
 *
 * Directories are created exclusively: a root execution whose directory
 * exists is refused before anything is written, and `resume-NNN` /
 * `replay-NNN` ids are taken by `mkdir`, so two processes never share one.
 *
 * @example
 * ```ts
 * const store = createFileRunStore('.locus-pi/runs')
 * const writer = await store.createExecution({ runId: 'run-1', kind: 'root' })
 * writer.append({ type: 'log', level: 'info', message: 'hello' })
 * await writer.close()
 * ```
 */
export function createFileRunStore(runsDir: string, options: FileRunStoreOptions = {}): RunStore {
  if (typeof runsDir !== 'string' || runsDir.length === 0) {
    throw new StoreOptionsError('createFileRunStore: runsDir must be the runs directory as a non-empty string (e.g. ".locus-pi/runs").')
  }
  const base = resolve(runsDir)
  const tailPollMs = options.tailPollMs ?? 25
  if (!Number.isFinite(tailPollMs) || tailPollMs <= 0) {
    throw new StoreOptionsError(`createFileRunStore: tailPollMs must be a positive number of milliseconds, got ${String(tailPollMs)}.`)
  }

  const executionDir = (ref: ExecutionRef): string => runPaths(base, ref.runId, ref.executionId).executionDir
  const streams = createFileStreams(base, streamRetentionOf('createFileRunStore', options.streamRetention), tailPollMs)

  async function requireRun(runId: string): Promise<string> {
    const rootDir = runPaths(base, runId).rootDir
    if (!(await isDirectory(rootDir))) throw new RunNotFoundError(runId, base)
    return rootDir
  }

  const rows = new LiveRows((row) => writeWhole(join(runPaths(base, row.runId).rootDir, RUN_ROW_FILE), `${JSON.stringify(row)}\n`))

  async function createExecution(create: CreateExecutionOptions): Promise<ExecutionWriter> {
    // A run written by another process (or before rows existed) has its row rebuilt from its journals first, so a
    // stale run.json (a crash between a line and its row) is healed by the next execution.
    const runId = validateRunId(create.runId, 'runId')
    const existing = create.kind === 'root' || rows.holds(runId) ? undefined : await rebuildRow(runId).catch(() => undefined)
    return createExecutionSync(create, existing)
  }

  function createExecutionSync(create: CreateExecutionOptions, existing: RunRow | undefined): ExecutionWriter {
    const runId = validateRunId(create.runId, 'runId')
    const rootDir = runPaths(base, runId).rootDir
    let executionId: string
    if (create.kind === 'root') {
      if (create.executionId !== undefined && create.executionId !== runId) {
        throw new StoreOptionsError(`createExecution: a root execution's id is its run id ("${runId}"), not "${create.executionId}".`)
      }
      mkdirSync(base, { recursive: true })
      try {
        mkdirSync(rootDir)
      } catch (error) {
        if (codeOf(error) === 'EEXIST') throw new RunExistsError(runId, rootDir, error)
        throw error
      }
      executionId = runId
    } else {
      if (!isDirectorySync(rootDir)) throw new RunNotFoundError(runId, base)
      const executionsDir = join(rootDir, RUN_LAYOUT.executions)
      mkdirSync(executionsDir, { recursive: true })
      if (isAllocatedKind(create.kind) && create.executionId === undefined) {
        executionId = allocateSync(executionsDir, create.kind)
      } else {
        if (create.executionId === undefined) {
          throw new StoreOptionsError(`createExecution: a ${create.kind} execution needs its executionId.`)
        }
        executionId = validateRunId(create.executionId, 'executionId')
        try {
          mkdirSync(join(executionsDir, executionId))
        } catch (error) {
          if (codeOf(error) === 'EEXIST') throw new ExecutionExistsError(runId, executionId, error)
          throw error
        }
      }
    }
    const paths = runPaths(base, runId, executionId)
    const now = create.now
    const journal = createJournalWriter(paths.journalPath, {
      runId,
      executionId,
      durability: create.durability,
      now: now === undefined ? undefined : () => new Date(now()),
      onLine: create.onLine,
    })
    const artifacts = fileArtifacts(paths.executionDir)
    if (create.kind === 'root') rows.open(runId, newRunRow(runId, runId, createdAtOf(statSync(rootDir))))
    else rows.open(runId, existing ?? newRunRow(runId, runId, Date.now()))
    let closed = false
    return {
      runId,
      executionId,
      kind: create.kind,
      location: paths.executionDir,
      runLocation: rootDir,
      journalLocation: paths.journalPath,
      artifacts,
      get lastSeq() {
        return journal.lastSeq
      },
      append: (input) => {
        const line = journal.append(input)
        rows.fold(runId, line, create.kind)
        return line
      },
      flush: async () => {
        await settle(() => { journal.flush(); })
        await rows.settled(runId)
      },
      close: async () => {
        await settle(() => { journal.close(); })
        if (closed) return
        closed = true
        await rows.close(runId)
      },
    }
  }

  async function listExecutions(runId: string): Promise<ExecutionInfo[]> {
    const rootDir = runPaths(base, runId).rootDir
    // One read of the run's directory tells both that the run exists and whether it has nested executions.
    let entries: Dirent[]
    try {
      entries = await readdir(rootDir, { withFileTypes: true })
    } catch (error) {
      if (codeOf(error) === 'ENOENT' || codeOf(error) === 'ENOTDIR') throw new RunNotFoundError(runId, base)
      throw error
    }
    const infos: ExecutionInfo[] = [{ runId, executionId: runId, kind: 'root', location: rootDir, journalLocation: join(rootDir, RUN_LAYOUT.journal) }]
    let names: string[] = []
    if (entries.some((entry) => entry.name === RUN_LAYOUT.executions && entry.isDirectory())) {
      try {
        names = await readdir(join(rootDir, RUN_LAYOUT.executions))
      } catch (error) {
        if (codeOf(error) !== 'ENOENT') throw error
      }
    }
    const found: { info: ExecutionInfo; createdAt: number }[] = []
    for (const name of names) {
      const location = join(rootDir, RUN_LAYOUT.executions, name)
      const stats = await stat(location).catch(() => undefined)
      if (stats?.isDirectory() !== true) continue
      found.push({ info: { runId, executionId: name, kind: kindOfExecutionId(runId, name), location, journalLocation: join(location, RUN_LAYOUT.journal) }, createdAt: createdAtOf(stats) })
    }
    found.sort((a, b) => a.createdAt - b.createdAt || a.info.executionId.localeCompare(b.info.executionId))
    return infos.concat(found.map((entry) => entry.info))
  }

  /**
   * The run directory's and its executions directory's change times and link
   * counts: a new execution is a new directory inside one of them, which
   * bumps both. A directory changed less than {@link RACY_MS} ago gives no
   * token (as git treats a file modified in the same tick as its index as
   * "racily clean"): a second change within the file system's timestamp tick
   * could leave its time as it was, so only a time the clock has since moved
   * past vouches for the next change being seen.
   */
  function executionsToken(runId: string): string | undefined {
    const rootDir = runPaths(base, runId).rootDir
    const root = statSync(rootDir, { throwIfNoEntry: false })
    if (root?.isDirectory() !== true) return undefined
    const executions = statSync(join(rootDir, RUN_LAYOUT.executions), { throwIfNoEntry: false })
    const now = Date.now()
    if (now - root.mtimeMs < RACY_MS || (executions !== undefined && now - executions.mtimeMs < RACY_MS)) return undefined
    return `${String(root.mtimeMs)}/${String(root.nlink)}/${String(executions?.mtimeMs ?? '-')}/${String(executions?.nlink ?? '-')}`
  }

  async function listRuns(filter: ListRunsFilter = {}): Promise<RunInfo[]> {
    let names: string[]
    try {
      names = await readdir(base)
    } catch (error) {
      if (codeOf(error) === 'ENOENT') return []
      throw error
    }
    const runs: RunInfo[] = []
    for (const name of names) {
      // Dot names (the schedules directory, temporary files) are never runs.
      if (name.startsWith('.')) continue
      const location = join(base, name)
      const stats = await stat(location).catch(() => undefined)
      if (stats?.isDirectory() !== true) continue
      const createdAt = createdAtOf(stats)
      if (filter.since !== undefined && createdAt < filter.since) continue
      runs.push({ runId: name, createdAt, location })
    }
    runs.sort((a, b) => (b.createdAt ?? 0) - (a.createdAt ?? 0) || b.runId.localeCompare(a.runId))
    return filter.limit === undefined ? runs : runs.slice(0, filter.limit)
  }

  async function* readLines(ref: ExecutionRef, read: ReadLinesOptions = {}): AsyncGenerator<JournalLine> {
    await requireRun(ref.runId)
    const afterSeq = read.afterSeq ?? -1
    let left = read.limit ?? Number.POSITIVE_INFINITY
    if (left <= 0) return
    const path = join(executionDir(ref), RUN_LAYOUT.journal)
    // Streamed a chunk at a time: reading a long run's journal holds one chunk, not every line.
    const lines = readJournalLines(path, {
      ...(read.onProblem === undefined ? {} : { onProblem: read.onProblem }),
      ...(read.onDamage === undefined ? {} : { onDamage: read.onDamage }),
    })
    try {
      for await (const line of lines) {
        if (line.seq <= afterSeq) continue
        yield line
        left -= 1
        if (left <= 0) return
      }
    } catch (error) {
      if (!JournalReadError.isInstance(error)) throw error
      if (!(await isDirectory(executionDir(ref)))) throw new RunNotFoundError(`${ref.runId}/${ref.executionId}`, base)
      if (codeOf(error.cause) === 'ENOENT') return
      throw error
    }
  }

  async function* tail(ref: ExecutionRef, tailOptions: TailOptions = {}): AsyncGenerator<JournalLine> {
    await requireRun(ref.runId)
    const path = join(executionDir(ref), RUN_LAYOUT.journal)
    const reader = createIncrementalReader(path, tailOptions)
    let lastSeq = tailOptions.afterSeq ?? -1
    let left = tailOptions.limit ?? Number.POSITIVE_INFINITY
    const signal = tailOptions.signal
    while (left > 0 && signal?.aborted !== true) {
      const fresh = await reader.next()
      for (const line of fresh) {
        if (line.seq <= lastSeq) continue
        lastSeq = line.seq
        yield line
        left -= 1
        if (left <= 0 || line.type === 'run_end') return
      }
      if (fresh.length === 0) await pollUntil(tailPollMs, signal)
    }
  }

  async function readArtifact(ref: ExecutionRef, key: string): Promise<string | undefined> {
    await requireRun(ref.runId)
    return fileArtifacts(executionDir(ref)).read(key)
  }

  async function putDeferredAnswer(runId: string, deferredId: string, answer: string): Promise<{ stored: boolean; answer: string }> {
    const dir = join(await requireRun(runId), DEFERRED_ANSWERS_DIR)
    const path = join(dir, `${validateDeferredId(deferredId)}.json`)
    await mkdir(dir, { recursive: true })
    // Written whole under a private name, then linked into place: link refuses a name that exists,
    // so of two answers given at once exactly one is kept, and a reader never sees half of one.
    const temporary = join(dir, `.${deferredId}.${randomBytes(6).toString('hex')}.tmp`)
    await writeFile(temporary, answer)
    try {
      await link(temporary, path)
      return { stored: true, answer }
    } catch (error) {
      if (codeOf(error) !== 'EEXIST') throw error
      return { stored: false, answer: await readFile(path, 'utf8') }
    } finally {
      await unlink(temporary).catch(() => undefined)
    }
  }

  async function withdrawDeferredAnswer(runId: string, deferredId: string, answer: string): Promise<boolean> {
    const path = join(runPaths(base, validateRunId(runId, 'runId')).rootDir, DEFERRED_ANSWERS_DIR, `${validateDeferredId(deferredId)}.json`)
    let kept: string
    try {
      kept = await readFile(path, 'utf8')
    } catch (error) {
      if (codeOf(error) === 'ENOENT' || codeOf(error) === 'ENOTDIR') return false
      throw error
    }
    if (kept !== answer) return false
    await unlink(path).catch((error: unknown) => {
      if (codeOf(error) !== 'ENOENT') throw error
    })
    return true
  }

  async function readDeferredAnswers(runId: string, ids?: Iterable<string>): Promise<ReadonlyMap<string, string>> {
    const dir = join(runPaths(base, validateRunId(runId, 'runId')).rootDir, DEFERRED_ANSWERS_DIR)
    const wanted = ids === undefined ? undefined : new Set(ids)
    const answers = new Map<string, string>()
    let names: string[]
    try {
      names = await readdir(dir)
    } catch (error) {
      if (codeOf(error) === 'ENOENT' || codeOf(error) === 'ENOTDIR') return answers
      throw error
    }
    for (const name of names) {
      if (name.startsWith('.') || !name.endsWith('.json')) continue
      const id = name.slice(0, -'.json'.length)
      if (wanted !== undefined && !wanted.has(id)) continue
      try {
        answers.set(id, await readFile(join(dir, name), 'utf8'))
      } catch (error) {
        if (codeOf(error) !== 'ENOENT') throw error
      }
    }
    return answers
  }

  const idempotency = fileIdempotencyIndex(base)

  function claimSync(ref: ExecutionRef): Ownership {
    const rootDir = runPaths(base, validateRunId(ref.runId, 'runId')).rootDir
    if (!isDirectorySync(rootDir)) throw new RunNotFoundError(ref.runId, base)
    // owner.lock in the run directory, created exclusively; a dead holder's lock is taken over (see acquireRunLock).
    // Synchronous, like creating the execution: a run starts its script without waiting on the event loop.
    const lock = acquireRunLock(rootDir, { runId: ref.runId, executionId: ref.executionId })
    return {
      runId: ref.runId,
      ...(lock.tookOver === undefined ? {} : { tookOver: { previous: lock.tookOver.from } }),
      setExecutionId: (executionId) => {
        lock.setExecutionId(executionId)
      },
      release: () => settle(() => {
        lock.release()
      }),
    }
  }

  /** Folds every root, resume and child journal of a run (replays never move its row); damaged lines are skipped as readers skip them. */
  async function rebuildRow(runId: string): Promise<RunRow> {
    const infos = await listExecutions(runId)
    const rootStats = await stat(runPaths(base, runId).rootDir)
    const executions: { executionId: string; kind: ExecutionKind; lines: JournalLine[] }[] = []
    for (const info of infos) {
      if (info.kind === 'replay') continue
      const lines: JournalLine[] = []
      for await (const line of readLines(info, { onProblem: () => undefined })) lines.push(line)
      executions.push({ executionId: info.executionId, kind: info.kind, lines })
    }
    return rowFromLines(runId, createdAtOf(rootStats), executions)
  }

  async function readRunRow(runId: string): Promise<RunRow | undefined> {
    const live = rows.get(runId)
    if (live !== undefined) return live
    const rootDir = runPaths(base, validateRunId(runId, 'runId')).rootDir
    let text: string | undefined
    try {
      text = await readFile(join(rootDir, RUN_ROW_FILE), 'utf8')
    } catch (error) {
      if (codeOf(error) !== 'ENOENT' && codeOf(error) !== 'ENOTDIR') throw error
    }
    const parsed = text === undefined ? undefined : parseRunRow(parseOrUndefined(text))
    if (parsed !== undefined && parsed.runId === runId) return parsed
    // A directory without a root journal is not a run (yet): nothing to list.
    if (!(await isFile(join(rootDir, RUN_LAYOUT.journal)))) return undefined
    // Missing (a run from before rows, or a crash before the first write) or damaged: the journals say what it is.
    const rebuilt = await rebuildRow(runId)
    await writeWhole(join(rootDir, RUN_ROW_FILE), `${JSON.stringify(rebuilt)}\n`).catch(() => undefined)
    return rebuilt
  }

  // Listings keep the rows they read between calls, and re-read a row file only when it was replaced.
  const rowIndex = createFileRowIndex({ base, rowFile: RUN_ROW_FILE, live: (runId) => rows.get(runId), read: readRunRow })
  const listRunRows = (filter: ListRunRowsFilter = {}): Promise<RunRowPage> => rowIndex.list(filter)

  return {
    kind: 'file',
    schedules: createFileScheduleStore(base),
    createExecution,
    readRunRow,
    listRunRows,
    claim: (ref) => settle(() => claimSync(ref)),
    hasRun: async (runId) => isDirectory(runPaths(base, validateRunId(runId, 'runId')).rootDir),
    listExecutions,
    executionsToken,
    listRuns,
    readLines,
    tail,
    readArtifact,
    putDeferredAnswer,
    withdrawDeferredAnswer,
    readDeferredAnswers,
    putIdempotencyKey: (key, record, now) => idempotency.put(key, record, now),
    readIdempotencyKey: (key, now) => idempotency.read(key, now),
    releaseIdempotencyKey: (key, runId) => idempotency.release(key, runId),
    streams,
  }
}

/**
 * Artifact files written at once in this process, across every store and
 * execution: each write holds a descriptor or two (the temporary file, then
 * the rename), and the limit on open files is the process's.
 */
const ARTIFACT_WRITES_AT_ONCE = 64
const artifactWriteSlots = boundedWrites(ARTIFACT_WRITES_AT_ONCE)

function fileArtifacts(dir: string): ArtifactWriter {
  // Two renames of one key can land in either order; the later write issued must be the one kept.
  const inOrder = writesInIssueOrder()
  return {
    async write(key, content, writeOptions) {
      const path = join(dir, validateArtifactKey(key))
      await inOrder(key, () => artifactWriteSlots(() => writeArtifact(path, key, content, writeOptions)))
    },
    async read(key) {
      const path = join(dir, validateArtifactKey(key))
      try {
        return await readFile(path, 'utf8')
      } catch (error) {
        if (codeOf(error) === 'ENOENT' || codeOf(error) === 'ENOTDIR') return undefined
        throw error
      }
    },
  }
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Whole or nothing: a reader sees the old file or the new one. */
async function writeWhole(path: string, content: string): Promise<void> {
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`
  try {
    await writeFile(temporary, content)
    await rename(temporary, path)
  } catch (error) {
    await unlink(temporary).catch(() => undefined)
    throw error
  }
}

async function writeArtifact(path: string, key: string, content: string, writeOptions: { readonly exclusive?: boolean } | undefined): Promise<void> {
  await mkdir(dirname(path), { recursive: true })
  if (writeOptions?.exclusive === true) {
    let handle
    try {
      handle = await open(path, 'wx')
    } catch (error) {
      if (codeOf(error) === 'EEXIST') throw new ArtifactExistsError(key, error)
      throw error
    }
    try {
      await handle.writeFile(content)
    } finally {
      await handle.close()
    }
    return
  }
  await writeWhole(path, content)
}

/**
 * Reads the lines appended to a journal since the last call; a line still
 * being written waits for its newline. Damage (an unreadable line, a `seq` gap
 * or repeat) is told as it is met, in the words the whole-file reader uses.
 */
function createIncrementalReader(
  path: string,
  tell: { readonly onProblem?: ((problem: string) => void) | undefined; readonly onDamage?: ((damage: JournalDamage) => void) | undefined },
): { next(): Promise<JournalLine[]> } {
  let offset = 0
  let pending = ''
  let lineNumber = 0
  let previousSeq: number | undefined
  let unreadableSince = 0
  const report = (damage: JournalDamage | undefined): void => {
    if (damage === undefined) return
    tell.onProblem?.(damage.problem)
    tell.onDamage?.(damage)
  }
  return {
    async next() {
      let handle
      try {
        handle = await open(path, 'r')
      } catch (error) {
        if (codeOf(error) === 'ENOENT') return []
        throw error
      }
      try {
        const { size } = await handle.stat()
        if (size <= offset) return []
        const buffer = Buffer.alloc(size - offset)
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset)
        offset += bytesRead
        pending += buffer.subarray(0, bytesRead).toString('utf8')
      } finally {
        await handle.close()
      }
      const end = pending.lastIndexOf('\n')
      if (end < 0) return []
      const complete = pending.slice(0, end)
      pending = pending.slice(end + 1)
      const lines: JournalLine[] = []
      for (const text of complete.split('\n')) {
        lineNumber += 1
        if (text.trim().length === 0) continue
        let line: JournalLine
        try {
          line = parseJournalLine(JSON.parse(text), lineNumber)
        } catch (error) {
          // Skipped, as readLines skips it; the caller is told why.
          unreadableSince += 1
          const message = error instanceof Error ? error.message : String(error)
          report({ lineNumber, kind: 'unreadable', problem: `line ${lineNumber}: ${error instanceof SyntaxError ? `line ${lineNumber} is not JSON: ${message}` : message}` })
          continue
        }
        if (previousSeq !== undefined && line.seq <= previousSeq) {
          report(journalDamage({ invalid: [], outOfOrder: [{ lineNumber, seq: line.seq, previousSeq }], gaps: [] })[0])
        } else {
          // As the whole-file reader counts: from 1 (or 0), one unreadable line may hold a number.
          const allowed = (previousSeq === undefined ? 1 : previousSeq + 1) + unreadableSince
          if (line.seq > allowed && !(previousSeq === undefined && line.seq === 0)) {
            report(journalDamage({ invalid: [], outOfOrder: [], gaps: [{ lineNumber, seq: line.seq, expectedSeq: allowed }] })[0])
          }
        }
        previousSeq = line.seq
        unreadableSince = 0
        lines.push(line)
      }
      return lines
    },
  }
}

function allocateSync(executionsDir: string, kind: 'resume' | 'replay'): string {
  for (let n = 1; ; n += 1) {
    const id = allocatedExecutionId(kind, n)
    try {
      mkdirSync(join(executionsDir, id))
      return id
    } catch (error) {
      if (codeOf(error) !== 'EEXIST') throw error
    }
  }
}

function createdAtOf(stats: { birthtimeMs: number; ctimeMs: number; mtimeMs: number }): number {
  return stats.birthtimeMs > 0 ? stats.birthtimeMs : Math.min(stats.ctimeMs, stats.mtimeMs)
}

async function isFile(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isFile() === true
}

async function isDirectory(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isDirectory() === true
}

function isDirectorySync(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

function codeOf(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code as string | undefined : undefined
}
