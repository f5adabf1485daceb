import type { ScheduleStore } from './schedule-store.js'
import type { JournalDamage, JournalDurability, JournalLine, JournalLineInput } from '@locus/journal'
import type { ListRunRowsFilter, RunRow, RunRowPage } from './run-rows.js'
import type { RunOwner } from './store-errors.js'
import type { RunStreams } from './stream-store.js'

/**
 * Why an execution exists: the run's first (`root`), a `resume` that
 * continues it, a `replay` that checks it, or a `child` run a workflow spawned.
 */
export const EXECUTION_KINDS = ['root', 'resume', 'replay', 'child'] as const
export type ExecutionKind = (typeof EXECUTION_KINDS)[number]

/** Names one execution of one run. The root execution's id equals the run id. */
export interface ExecutionRef {
  readonly runId: string
  readonly executionId: string
}

/** What {@link RunStore.createExecution} needs. */
export interface CreateExecutionOptions {
  readonly runId: string
  readonly kind: ExecutionKind
  /**
   * The execution's id; omit it for the root execution (its id is the run id).
   * For `resume` and `replay` omit it too and the store allocates the next
   * free `resume-NNN` / `replay-NNN` atomically, so two processes never share one.
   */
  readonly executionId?: string | undefined
  /**
   * How hard the sink tries to keep each line: `line` (each line durable
   * before `append` returns), `batch` (grouped), `none` (left to the OS or
   * the database's own commit).
   * @default 'batch'
   */
  readonly durability?: JournalDurability | undefined
  /** The clock that stamps `ts`. @default Date.now */
  readonly now?: (() => number) | undefined
  /** Called with every stamped line, after it was handed to the sink. */
  readonly onLine?: ((line: JournalLine) => void) | undefined
}

/**
 * Appends the stamped lines of ONE execution. There is one writer per
 * execution: the sink assigns `seq`, stamps `v`, `ts`, `runId` and
 * `executionId`, validates the line, and persists it with the chosen
 * durability. `append` is synchronous so that the order of lines is the order
 * of calls; a sink whose medium is asynchronous queues the writes and reports
 * a failed write at the next `append`, `flush` or `close`.
 */
export interface JournalSink extends ExecutionRef {
  /** Stamps, validates and appends one line; returns it as written. @throws when the line is invalid or the sink is closed. */
  append(line: JournalLineInput): JournalLine
  /** The last `seq` appended, or -1 before the first line. */
  readonly lastSeq: number
  /** Makes every line appended so far durable. */
  flush(): Promise<void>
  /** Flushes and closes; later appends throw. Idempotent. */
  close(): Promise<void>
}

/**
 * Named artifacts of one execution, by keys relative to it:
 * `result.json`, `outputs/README.md`, `calls/<callId>/result/result.json`,
 * `calls/<callId>/transcript/transcript.json` and whatever a host writes
 * under its call's transcript key. Keys use `/` and never leave the execution.
 */
export interface ArtifactWriter {
  /** Writes an artifact whole: a reader sees the old content or the new, never half. With `exclusive`, an existing key is refused. */
  write(key: string, content: string, options?: { readonly exclusive?: boolean }): Promise<void>
  /** Reads an artifact of this execution back, or `undefined` when it was never written. */
  read(key: string): Promise<string | undefined>
}

/** An execution opened for writing: its journal sink and its artifacts. */
export interface ExecutionWriter extends JournalSink {
  readonly kind: ExecutionKind
  readonly artifacts: ArtifactWriter
  /**
   * Where a person finds this execution (a directory for the file store, a
   * URI for others); for messages only, never parsed.
   */
  readonly location: string
  /** Where a person finds the whole run (its root execution); for messages only. */
  readonly runLocation: string
  /** Where a person finds this execution's journal, when the store keeps it apart from `location`; for messages only. */
  readonly journalLocation?: string | undefined
  /**
   * Awaited by the runtime after it appends a call's start line and before it
   * dispatches the call (an agent or tool attempt, a remote trigger, a spawn,
   * a deferral opened): it resolves once the start line is committed under
   * whatever ownership the writer holds, and rejects (with `LeaseLostError`
   * under a lease) when the call must not start. Absent means nothing to wait
   * for: the file and memory stores write synchronously under a local lock.
   */
  beforeDispatch?(): Promise<void>
}

/**
 * The right to continue a run, held by one execution at a time, from
 * {@link RunStore.claim}: the file store's `owner.lock`, PostgreSQL's lease
 * with epoch fencing, an in-process set in memory.
 */
export interface Ownership {
  readonly runId: string
  /** Set when this claim replaced an owner that had died (or whose lease lapsed): who that was, when the store could tell. */
  readonly tookOver?: { readonly previous: RunOwner | string | undefined } | undefined
  /** Records which execution holds the claim now (a resume's id is known only once its execution exists). */
  setExecutionId(executionId: string): void
  /** Gives the run up; another execution may claim it. Idempotent. */
  release(): Promise<void>
}

/** One execution as a listing shows it. */
export interface ExecutionInfo extends ExecutionRef {
  readonly kind: ExecutionKind
  readonly location: string
  /** Where a person finds this execution's journal, when the store keeps it apart from `location` (the file store: the journal file); for messages only. */
  readonly journalLocation?: string | undefined
}

/** One run as a listing shows it: ids and where to look; read its lines for the rest. */
export interface RunInfo {
  readonly runId: string
  /** When the run's directory or row was created, epoch milliseconds, when the store knows it. */
  readonly createdAt?: number | undefined
  readonly location: string
}

/** Which runs {@link RunStore.listRuns} returns. */
export interface ListRunsFilter {
  /** Only runs created at or after this time (epoch milliseconds). */
  readonly since?: number | undefined
  /** At most this many, newest first. */
  readonly limit?: number | undefined
}

/** How {@link RunStore.readLines} and {@link RunStore.tail} read. */
export interface ReadLinesOptions {
  /** Only lines whose `seq` is greater. @default -1 (from the first line) */
  readonly afterSeq?: number | undefined
  /** Stop after this many lines. */
  readonly limit?: number | undefined
  /**
   * Told about what the reader skipped: a torn last line (a crash mid-write)
   * or a complete line that is not a valid journal line. Skipped lines are
   * never returned; this says why some bytes were not.
   */
  readonly onProblem?: ((problem: string) => void) | undefined
  /**
   * Told about each place the journal is damaged, after its last line has
   * been read: a complete line that cannot be read, or a `seq` gap or repeat
   * (lines lost, or one twice). A torn last line is not damage. Each also
   * goes to `onProblem`. A store whose medium cannot be damaged this way
   * never calls it.
   */
  readonly onDamage?: ((damage: JournalDamage) => void) | undefined
}

/** How {@link RunStore.tail} follows a live execution. */
export interface TailOptions extends ReadLinesOptions {
  /** Ends the tail. The iterator also ends by itself after the execution's `run_end`. */
  readonly signal?: AbortSignal | undefined
}

/**
 * The only way the runtime persists anything. Adapters: `createFileRunStore`
 * (the `.locus-pi/runs` layout), `createMemoryRunStore` (tests and
 * embedding; writes no file), and a PostgreSQL one in its own package. Every
 * adapter passes the same contract suite.
 */
export interface RunStore {
  /** `file`, `memory`, `postgres`... for messages and diagnostics. */
  readonly kind: string
  /**
   * The store's schedules and the record of each of their slots (file,
   * memory and PostgreSQL adapters have it; a store without it cannot hold
   * schedules).
   */
  readonly schedules?: ScheduleStore | undefined
  /**
   * Creates an execution exclusively and opens it for writing. A root
   * execution whose run exists already is refused with `RunExistsError`
   * (code `RUN_EXISTS`), a resume or replay of an unknown run with
   * `RunNotFoundError`, and nothing is written in either case. Resume and
   * replay ids (`resume-001`, ...) are allocated by the store atomically, so
   * two processes never share one.
   *
   * Asynchronous so that a store whose medium is remote can settle the
   * conflict before the run starts; the sink it returns appends synchronously.
   */
  createExecution(options: CreateExecutionOptions): Promise<ExecutionWriter>
  /**
   * Claims the right to continue a run: one execution at a time (a run or a
   * resume; a replay writes only its own execution and claims nothing). A
   * live holder makes this throw `RunOwnedError` (code `RUN_OWNED`) with
   * nothing written; a holder that died is taken over, and the ownership says
   * whom it replaced. @throws RunNotFoundError for an unknown run
   */
  claim(ref: ExecutionRef): Promise<Ownership>
  /** True when the run exists. */
  hasRun(runId: string): Promise<boolean>
  /** The run's executions in creation order, root first. @throws RunNotFoundError */
  listExecutions(runId: string): Promise<ExecutionInfo[]>
  /**
   * Optional: a token, cheap to get, that is different whenever the run got
   * an execution since the token was taken (a resume, a replay, a child), so
   * a reader holding a finished run can tell it is unchanged without listing
   * its executions. `undefined` when the store cannot vouch for a token now
   * (the run was changed too recently for its clock to tell a later change
   * apart, or it does not exist): the reader lists them then. The file store
   * has it; a store without it is listed every time.
   */
  executionsToken?(runId: string): string | undefined
  /** Runs, newest first. */
  listRuns(filter?: ListRunsFilter): Promise<RunInfo[]>
  /**
   * The complete, valid lines of an execution after `afterSeq`, in `seq`
   * order. A torn last line (a crash mid-write) is not a line. @throws RunNotFoundError
   */
  readLines(ref: ExecutionRef, options?: ReadLinesOptions): AsyncIterable<JournalLine>
  /**
   * Every line after `afterSeq`, then each new line as it is appended, with
   * no gap and no duplicate, until `run_end` or the signal.
   */
  tail(ref: ExecutionRef, options?: TailOptions): AsyncIterable<JournalLine>
  /** Reads an artifact of an execution, or `undefined`. */
  readArtifact(ref: ExecutionRef, key: string): Promise<string | undefined>
  /**
   * Keeps the answer to one of a run's deferrals (opaque text; the runtime
   * writes JSON), whoever executes the run now, or nobody: the execution that
   * waits on the deferral, or the next one to resume the run, reads it with
   * {@link readDeferredAnswers}. Not fenced by any lease: an answer comes from
   * outside the run. The first answer is final: a later put keeps it and
   * returns it with `stored: false`, so the caller can tell a repeat from a
   * conflict. @throws StoreOptionsError for an id that is not a deferral id
   */
  putDeferredAnswer(runId: string, deferredId: string, answer: string): Promise<{ readonly stored: boolean; readonly answer: string }>
  /**
   * Withdraws a kept answer the run refused (its result did not fit the tool's
   * output schema), so the deferral can be answered again: removes it only
   * while it is exactly `answer`; true when it was removed.
   */
  withdrawDeferredAnswer(runId: string, deferredId: string, answer: string): Promise<boolean>
  /** The answers kept for a run's deferrals, by deferral id; only those in `ids` when given. */
  readDeferredAnswers(runId: string, ids?: Iterable<string>): Promise<ReadonlyMap<string, string>>
  /**
   * Optional: calls `onKept` soon after any process keeps something new for
   * the run with {@link putDeferredAnswer} (an answer, a signal, an update),
   * so a reader need not wait for its next look; returns the function that
   * stops it. A hint only: a reader still looks on its own schedule, and a
   * call may come with nothing new. PostgreSQL has it (a NOTIFY); the file
   * and memory stores do not.
   */
  watchDeferredAnswers?(runId: string, onKept: () => void): () => void
  /**
   * Keeps which run an idempotency key started, until `record.expiresAt`,
   * so a repeated request finds it after a restart and from any process on
   * the store. The first put of a key that is not expired at `now` wins: a
   * later put keeps it and returns it with `stored: false`, so the caller
   * answers with that run (same fingerprint) or refuses the request (another
   * one). A key expired at `now` is replaced. @throws StoreOptionsError for
   * an empty key or a record that is not one
   */
  putIdempotencyKey(key: string, record: IdempotencyRecord, now: number): Promise<{ readonly stored: boolean; readonly record: IdempotencyRecord }>
  /** The record of `key` while it is not expired at `now`; an expired key is forgotten. */
  readIdempotencyKey(key: string, now: number): Promise<IdempotencyRecord | undefined>
  /** Forgets `key` while it still names `runId` (a start that failed), so the request may be tried again; true when it was removed. */
  releaseIdempotencyKey(key: string, runId: string): Promise<boolean>
  /**
   * The run's summary row, kept by the store from the lines its writers
   * append; `undefined` for an unknown run. A row that is missing or damaged
   * (a run written before rows existed, a torn write) is rebuilt from the
   * journal, never trusted over it.
   */
  readRunRow(runId: string): Promise<RunRow | undefined>
  /**
   * A page of summary rows, newest first, filtered by workflow, status and
   * creation time; reads rows only, never a journal line. @throws
   * StoreOptionsError for a cursor that does not decode, a bad status or limit
   */
  listRunRows(filter?: ListRunRowsFilter): Promise<RunRowPage>
  /**
   * The runs' token streams: each LLM request's deltas, batched, with a
   * gap-free offset per run, kept `streamRetention` after the run ends. The
   * file, memory and PostgreSQL adapters have it; a store without it streams
   * nothing (the journal never holds a token either way).
   */
  readonly streams?: RunStreams | undefined
}

/** What the store keeps for an idempotency key: the request it came with and the run that request started. */
export interface IdempotencyRecord {
  /** The request in a canonical form (the caller's choice); a repeat with another fingerprint is a conflict. */
  readonly fingerprint: string
  /** The run the first request with the key started. */
  readonly runId: string
  /** When the key is forgotten, in epoch milliseconds. */
  readonly expiresAt: number
}
