import {
  AGENT_RESULT_SCHEMA,
  type AgentEndLine,
  type AgentResultEnvelope,
  type AgentStartLine,
  type ChildEndLine,
  type ChildStartLine,
  type JournalLine,
  type JournalScanResult,
  type ToolEndLine,
  type ToolStartLine,
  JournalReadError,
  parseAgentResultEnvelope,
  type JournalLineReader,
  openJournalLineReader,
  scanJournal,
} from '@locus/journal'
import { ARTIFACT_KEYS } from '@locus/store'
import { dirname, resolve } from 'node:path'
import type { CanonicalRequest, CanonicalRequestField } from './canonical-request.js'
import { CALL_KINDS, type CallKind, CallTable, Ending } from './call-table.js'
import { type IndexedCalls, type RecordedCall, type Recording, type RecordingEntry, IndexedRecording, ROWS_PER_SOURCE, toRecordedCall } from './recording.js'
import { DuplicateOrdinalError, RecordingUnreadableError } from './replay-errors.js'


/** The identity fields an `agent_start` line keeps; the others (choice, budgets...) are not journaled. */
const JOURNALED_REQUEST_FIELDS: readonly CanonicalRequestField[] = ['agent', 'prompt', 'timeoutMs']

/**
 * Why a logical call found in the journal is not in the recording:
 * - `unfinished`: its last attempt has an `agent_start` but no terminal line (`agent_end` or `error`).
 * - `no-request-key`: neither its `agent_start` lines nor its envelope carry a `requestKey`.
 * - `missing-envelope`: the final attempt's `result.json` cannot be read.
 * - `invalid-envelope`: it can be read but is not a valid `locus.agent.run-result.v2` envelope.
 * - `no-result`: a tool call completed but its `tool_end` holds no result (a journal written
 *   before results were recorded, or a result that could not be detached as JSON).
 *
 * A skipped call runs live when a session reaches its ordinal.
 */
export const SKIPPED_CALL_REASONS = ['unfinished', 'no-request-key', 'missing-envelope', 'invalid-envelope', 'no-result'] as const
export type SkippedCallReason = (typeof SKIPPED_CALL_REASONS)[number]

/** A logical call that is in the journal but not in the recording. */
export interface SkippedCall {
  readonly ordinal: string
  /** The logical call: its `logicalCallId`, or a tool call's `toolCallId`. */
  readonly logicalCallId: string
  /** The final attempt's `callId`. */
  readonly callId: string
  readonly reason: SkippedCallReason
  /** What went wrong, for a person. */
  readonly detail: string
}

/** A recording read from a run directory, with what the reader had to leave out. */
export interface LoadedRecording extends Recording {
  /** The execution directory, absolute. */
  readonly executionDir: string
  readonly journalPath: string
  /** True when the journal ends in a partial line (the run crashed mid-write); the line was ignored. */
  readonly tornTail: boolean
  /** Complete journal lines that were not valid and were ignored. */
  readonly invalidLines: number
  /** Logical calls found in the journal but not recorded, in journal order. */
  readonly skipped: readonly SkippedCall[]
}

/** A call's envelope, or why it could not be had. */
type EnvelopeRead = { envelope: AgentResultEnvelope } | { reason: 'missing-envelope' | 'invalid-envelope'; detail: string }

/**
 * Builds the envelope of a call from its journal lines when they hold the
 * whole result: a failed agent_end, or a completed one that carries its
 * answer. Reading one file per call would otherwise dominate loading a long
 * run; older journals without `answer` fall back to the envelope files.
 */
function envelopeFromJournal(start: AgentStartLine, end: AgentEndLine): AgentResultEnvelope | undefined {
  if (end.status === 'completed' && end.answer === undefined) return undefined
  // Built one property at a time in a fixed order, not by spreading optional parts: a replay builds one
  // envelope per recorded call, and spreads of optional objects gave V8 a large dictionary-mode object each time.
  const envelope: Record<string, unknown> = {
    schema: AGENT_RESULT_SCHEMA,
    callId: start.callId,
    logicalCallId: start.logicalCallId,
    attempt: start.attempt,
    attempts: start.attempts,
    agent: start.agent,
    ordinal: start.ordinal,
  }
  if (start.requestKey !== undefined) envelope.requestKey = start.requestKey
  if (end.stopReason !== undefined) envelope.stopReason = end.stopReason
  if (end.usage !== undefined) envelope.usage = end.usage
  // Artifact keys, relative to the execution, never paths: the same in every store.
  envelope.paths = { transcriptDir: ARTIFACT_KEYS.callTranscript(start.callId), resultDir: ARTIFACT_KEYS.callResult(start.callId) }
  envelope.status = end.status
  if (end.status === 'completed') {
    envelope.answer = end.answer
  } else {
    envelope.failureCause = end.failureCause ?? 'unclassified'
    if (end.reason !== undefined) envelope.reason = end.reason
  }
  return envelope as unknown as AgentResultEnvelope
}

function journaledRequest(start: AgentStartLine): CanonicalRequest {
  return start.timeoutMs === undefined
    ? { agent: start.agent, prompt: start.prompt }
    : { agent: start.agent, prompt: start.prompt, timeoutMs: start.timeoutMs }
}

/**
 * Where a line a recording needs can be read again: a byte range of a journal
 * file, or a slot in a list of lines kept in memory.
 */
interface LineSource {
  read(at: number, length: number): JournalLine
  close?(): void
}

/** Builds a recording from journal lines seen once, in order, keeping per call only its key and where its lines are. */
class RecordingIndexer implements IndexedCalls {
  readonly #table = new CallTable()
  /** Rows by `logicalCallId`, `toolCallId` and `childCallId` while the journal is read. */
  readonly #rowOf: [Map<string, number>, Map<string, number>, Map<string, number>] = [new Map<string, number>(), new Map<string, number>(), new Map<string, number>()]
  /** Agent attempts not yet ended, by `callId`, so an `error` line (which may lack `logicalCallId`) finds its call. */
  readonly #openAttempts = new Map<string, number>()
  /** Envelopes read from their files at load time (older journals, and attempts that threw), by row. */
  readonly #envelopes = new Map<number, AgentResultEnvelope>()
  readonly #source: LineSource & { readonly executionDir: string }

  constructor(source: LineSource & { readonly executionDir: string }) {
    this.#source = source
  }

  /** Takes one valid line, with where it can be read again. */
  add(line: JournalLine, at: number, length: number): void {
    switch (line.type) {
      case 'agent_start':
        this.#start('agent', line.logicalCallId, line.ordinal, line.attempt, line.requestKey, at, length, line.callId)
        return
      case 'tool_start':
        // Only the tool calls the script made itself are recorded; a child's stay under its agent call.
        if (line.ordinal === undefined || line.parentCallId !== undefined) return
        this.#start('tool', line.toolCallId, line.ordinal, line.attempt, line.requestKey, at, length)
        return
      case 'child_start':
        this.#start('child', line.childCallId, line.ordinal, line.attempt, line.requestKey, at, length)
        return
      case 'agent_end':
      case 'error': {
        if (line.callId === undefined) return
        const row = this.#openAttempts.get(line.callId)
        if (row === undefined) return
        this.#openAttempts.delete(line.callId)
        if (line.type === 'error') this.#end(row, Ending.threw, -1, 0)
        else this.#end(row, line.status === 'completed' && line.answer === undefined ? Ending.answerElsewhere : Ending.whole, at, length)
        return
      }
      case 'tool_end':
      case 'child_end': {
        const row = line.type === 'tool_end' ? this.#rowOf[1].get(line.toolCallId) : this.#rowOf[2].get(line.childCallId)
        if (row === undefined || this.#table.attempt[row] !== line.attempt) return
        this.#end(row, line.status === 'completed' && line.result === undefined ? Ending.noResult : Ending.whole, at, length)
        return
      }
      default:
    }
  }

  // eslint-disable-next-line max-params -- a hot-path column builder: one call per recorded line, no options object to allocate
  #start(kind: CallKind, id: string, ordinal: string, attempt: number, key: string | undefined, at: number, length: number, callId?: string): void {
    const table = this.#table
    const rows = this.#rowOf[CALL_KINDS.indexOf(kind)] as Map<string, number>
    let row = rows.get(id)
    if (row === undefined) {
      row = table.add(kind, ordinal)
      rows.set(id, row)
      table.finalKey.set(row, key)
    } else {
      const first = table.firstKeyOf(row)
      // The final attempt is the highest-numbered one; a repeated or older start only fills in a missing first key.
      if (attempt <= (table.attempt[row] ?? 0)) {
        if (first === undefined && key !== undefined) table.firstKeys.set(row, key)
        return
      }
      const firstKey = first ?? key
      if (firstKey === key) table.firstKeys.delete(row)
      else if (firstKey !== undefined) table.firstKeys.set(row, firstKey)
      table.finalKey.set(row, key)
      if (kind === 'agent') for (const [open, openRow] of this.#openAttempts) if (openRow === row) this.#openAttempts.delete(open)
    }
    if (callId !== undefined) this.#openAttempts.set(callId, row)
    table.attempt[row] = attempt
    table.startAt[row] = at
    table.startLength[row] = length
    this.#end(row, Ending.none, -1, 0)
  }

  #end(row: number, ending: Ending, at: number, length: number): void {
    this.#table.ending[row] = ending
    this.#table.endAt[row] = at
    this.#table.endLength[row] = length
  }

  #line<TType extends JournalLine['type']>(row: number, which: 'start' | 'end', type: TType): Extract<JournalLine, { type: TType }> {
    const table = this.#table
    const line =
      which === 'start'
        ? this.#source.read(table.startAt[row] ?? -1, table.startLength[row] ?? 0)
        : this.#source.read(table.endAt[row] ?? -1, table.endLength[row] ?? 0)
    if (line.type !== type) throw new Error(`the recording expected a ${type} line where it found a ${line.type} line`)
    return line as Extract<JournalLine, { type: TType }>
  }

  kindOf(row: number): CallKind {
    return this.#table.kindOf(row)
  }

  close(): void {
    this.#source.close?.()
  }

  keyOf(row: number): string {
    return this.#keyOf(row) ?? ''
  }

  #keyOf(row: number): string | undefined {
    const table = this.#table
    if (table.kindOf(row) !== 'agent') return table.firstKeyOf(row)
    return table.finalKey.get(row) ?? this.#envelopes.get(row)?.requestKey ?? table.firstKeyOf(row)
  }

  /** Reads a recorded call back whole, as a replay asks for it. */
  materialize(row: number): RecordedCall {
    const ordinal = this.#table.ordinal[row] as string
    const key = this.keyOf(row)
    const kind = this.#table.kindOf(row)
    if (kind === 'agent') {
      const start = this.#line(row, 'start', 'agent_start')
      const envelope = this.#envelopes.get(row) ?? envelopeFromJournal(start, this.#line(row, 'end', 'agent_end'))
      return toRecordedCall({ ordinal, key, envelope: envelope as AgentResultEnvelope, request: journaledRequest(start), requestFields: JOURNALED_REQUEST_FIELDS }, 0)
    }
    if (kind === 'tool') return toRecordedCall(toolEntry(ordinal, key, this.#line(row, 'start', 'tool_start'), this.#line(row, 'end', 'tool_end')), 0)
    return toRecordedCall(childEntry(ordinal, key, this.#line(row, 'start', 'child_start'), this.#line(row, 'end', 'child_end')), 0)
  }

  /**
   * Decides, per call, whether it is recorded or skipped and why, and returns
   * the recorded ordinals with their rows. Only calls whose answer is not on
   * their terminal line (older journals, attempts that threw) read anything
   * here: their envelope file. Skipped calls are listed agents first, then
   * tools, then spawns, each in the order they started.
   */
  finish(envelopeOf: (callId: string) => EnvelopeRead): { rows: Map<string, number>; skipped: SkippedCall[] } {
    const table = this.#table
    if (table.size >= ROWS_PER_SOURCE) throw new RangeError(`a recording holds at most ${ROWS_PER_SOURCE} calls per execution; this journal has ${table.size}`)
    const recorded = new Map<string, number>()
    const skipped: SkippedCall[] = []
    for (const [index, rows] of this.#rowOf.entries()) {
      for (const [id, row] of rows) {
        const ordinal = table.ordinal[row] as string
        const problem = this.#problemOf(row, CALL_KINDS[index] ?? 'agent', envelopeOf)
        if (problem === undefined) {
          if (recorded.has(ordinal)) throw new DuplicateOrdinalError(ordinal)
          recorded.set(ordinal, row)
        } else {
          skipped.push({ ordinal, logicalCallId: id, ...problem })
        }
      }
      rows.clear()
    }
    this.#openAttempts.clear()
    return { rows: recorded, skipped }
  }

  #problemOf(row: number, kind: CallKind, envelopeOf: (callId: string) => EnvelopeRead): Pick<SkippedCall, 'callId' | 'reason' | 'detail'> | undefined {
    const table = this.#table
    const ending = table.ending[row]
    if (kind === 'agent') {
      if (ending === Ending.whole && table.finalKey.has(row)) return undefined
      const start = this.#line(row, 'start', 'agent_start')
      if (ending === Ending.none) return { callId: start.callId, reason: 'unfinished', detail: `attempt ${start.attempt} of ${start.attempts} has no agent_end or error line` }
      if (ending !== Ending.whole) {
        const read = envelopeOf(start.callId)
        if ('reason' in read) return { callId: start.callId, reason: read.reason, detail: read.detail }
        this.#envelopes.set(row, read.envelope)
      }
      const key = this.#keyOf(row)
      if (key === undefined || key.length === 0) {
        return { callId: start.callId, reason: 'no-request-key', detail: 'the call was journaled without a requestKey, so replay cannot tell whether it is the same request' }
      }
      return undefined
    }
    const key = table.firstKeyOf(row)
    const problem = ending === Ending.none ? 'unfinished' : key === undefined || key === '' ? 'no-request-key' : ending === Ending.noResult ? 'no-result' : undefined
    if (problem === undefined) return undefined
    const start = this.#source.read(table.startAt[row] ?? -1, table.startLength[row] ?? 0)
    const [noun, name, callId, endLine] =
      start.type === 'child_start' ? ['child workflow', start.workflow, start.childExecutionId, 'child_end'] : ['tool', start.type === 'tool_start' ? start.tool : '', start.type === 'tool_start' ? start.toolCallId : '', 'tool_end']
    const detail =
      problem === 'unfinished'
        ? `${noun} "${name}" attempt ${table.attempt[row] ?? 0} has no ${endLine} line`
        : problem === 'no-request-key'
          ? `the ${start.type === 'child_start' ? 'spawn' : 'tool call'} was journaled without a requestKey`
          : `${noun} "${name}" completed but its ${endLine} holds no result, so it runs again`
    return { callId, reason: problem, detail }
  }
}

function toolEntry(ordinal: string, key: string, start: ToolStartLine, end: ToolEndLine): RecordingEntry {
  const args = start.args
  return {
    kind: 'tool',
    ordinal,
    key,
    record: {
      callId: start.toolCallId,
      tool: start.tool,
      status: end.status === 'completed' ? 'completed' : 'failed',
      attempt: end.attempt,
      maxAttempts: end.maxAttempts,
      ...(end.result === undefined ? {} : { result: end.result }),
      ...(end.failure === undefined ? {} : { failure: end.failure }),
      ...(end.status === 'timed-out' ? { timedOut: true } : {}),
    },
    ...(args === undefined ? {} : { request: { tool: start.tool, args } }),
  }
}

function childEntry(ordinal: string, key: string, start: ChildStartLine, end: ChildEndLine): RecordingEntry {
  return {
    kind: 'child',
    ordinal,
    key,
    record: {
      callId: start.childCallId,
      workflow: start.workflow,
      status: end.status === 'completed' ? 'completed' : 'failed',
      attempt: end.attempt,
      maxAttempts: end.maxAttempts,
      childExecutionId: end.childExecutionId,
      ...(end.disposition === undefined ? {} : { disposition: end.disposition }),
      ...(end.result === undefined ? {} : { result: end.result }),
      ...(end.failure === undefined ? {} : { failure: end.failure }),
      ...(end.status === 'timed-out' ? { timedOut: true } : {}),
    },
    ...(start.input === undefined ? {} : { request: { workflow: start.workflow, input: start.input } }),
  }
}

/** The recording of one execution, with what its reader had to leave out. */
class JournalRecording extends IndexedRecording implements LoadedRecording {
  // eslint-disable-next-line max-params -- a hot-path column builder: one call per recorded line, no options object to allocate
  constructor(
    calls: IndexedCalls,
    rows: ReadonlyMap<string, number>,
    readonly executionDir: string,
    readonly journalPath: string,
    readonly tornTail: boolean,
    readonly invalidLines: number,
    readonly skipped: readonly SkippedCall[],
  ) {
    super([calls], rows)
  }
}

/** Journal readers a recording holds open, closed when the recording is collected if nobody closed them. */
const openJournals = new FinalizationRegistry<JournalLineReader>((reader) => {
  reader.close()
})

/** Lines read back from a journal file, through one reader kept open between reads. */
class JournalFileLines implements LineSource {
  readonly #reader: JournalLineReader

  constructor(
    readonly executionDir: string,
    journalPath: string,
  ) {
    this.#reader = openJournalLineReader(journalPath)
    openJournals.register(this, this.#reader, this)
  }

  read(at: number, length: number): JournalLine {
    return this.#reader.read({ byteOffset: at, byteLength: length })
  }

  close(): void {
    this.#reader.close()
  }
}

/** How {@link loadRecording} reads. */
export interface LoadRecordingOptions {
  /**
   * Called with every valid journal line as it is read, in order, so a caller
   * that needs something else from the journal (open deferrals, say) gets it
   * from the same single read. The line is not kept.
   */
  readonly onLine?: (line: JournalLine) => void
  /**
   * The result envelope of a call (JSON text) whose answer is not on its
   * journal lines: an attempt that threw, or an older journal's `agent_end`
   * without its answer. The recording reads no file of its own; without this,
   * such calls are skipped as `missing-envelope` and run live again.
   */
  readonly envelopeOf?: EnvelopeTextOf
}

/**
 * Reads the recording of one execution from a journal file, once, one chunk
 * at a time. For each logical `agent()` call (grouped by `logicalCallId`) it
 * keeps the ordinal and request key of its FINAL attempt and where that
 * attempt's lines are in the file; likewise for each `tool()` call the script
 * made (by `toolCallId`) and each child workflow spawn. A call's answer, from
 * its terminal line, is read back from the file only when a replay asks for
 * that call, so memory grows with the number of calls, not with the size of
 * their answers. An older journal whose `agent_end` lines lack the answer, and
 * an attempt that threw, need the envelope its store kept: pass `envelopeOf`
 * (this package reads no file besides the journal). All attempts of a call
 * share one ordinal, so a discarded attempt is never recorded on its own. The
 * journal must not be rewritten while the recording is in use; journals are
 * append-only, so appends do no harm.
 *
 * `journalFile` is the path of one execution's journal; where a store keeps
 * it is the store's business (the file store reports it as
 * `ExecutionInfo.journalLocation`). A torn last line is ignored, invalid lines
 * are counted, and calls that never finished or lack a readable envelope are
 * listed in `skipped` instead of recorded; nothing of that throws.
 *
 * The recorded request of each call is what the journal keeps of it
 * (`agent`, `prompt`, `timeoutMs`), so a divergence names those fields when
 * they differ; a difference in budgets, choice or contract version still
 * diverges (the key covers them), with those fields named only when the rest
 * of the request is known to be absent.
 *
 * @throws {RecordingUnreadableError} code `REPLAY_RECORDING_UNREADABLE` when the journal cannot be read at all.
 * @throws {DuplicateOrdinalError} when two logical calls in the journal share an ordinal.
 *
 * @example
 * ```ts
 * const recording = loadRecording('.locus-pi/runs/20260922-161200-k3x9qz/journal.jsonl')
 * const session = createReplaySession(recording)
 * ```
 */
export function loadRecording(journalFile: string, options: LoadRecordingOptions = {}): LoadedRecording {
  const journalPath = resolve(journalFile)
  const executionDir = dirname(journalPath)
  const indexer = new RecordingIndexer(new JournalFileLines(executionDir, journalPath))
  const onLine = options.onLine
  let scanned: JournalScanResult
  try {
    scanned = scanJournal(journalPath, (line, place) => {
      indexer.add(line, place.byteOffset, place.byteLength)
      onLine?.(line)
    })
  } catch (error) {
    if (!JournalReadError.isInstance(error)) throw error
    throw new RecordingUnreadableError(executionDir, journalPath, error)
  }
  const envelopeOf = options.envelopeOf
  const { rows, skipped } = indexer.finish((callId) => envelopeFromText(executionDir, callId, envelopeOf?.(callId)))
  return new JournalRecording(indexer, rows, executionDir, journalPath, scanned.tornTail !== null, scanned.invalid.length, skipped)
}

/** A call's result envelope as its store keeps it (JSON text), or `undefined` when it has none. */
export type EnvelopeTextOf = (callId: string) => string | undefined

/**
 * Builds a recording from journal lines handed over one at a time, as a
 * `RunStore` streams them (`store.readLines(execution)`). It keeps only the
 * lines of each call's final attempt, and reads nothing itself: a completed
 * call's answer comes from its `agent_end` line (which every current journal
 * carries). A call that ended another way (its host threw, so an `error` line
 * ended it) or whose `agent_end` lacks its answer (an older journal) needs its
 * result envelope: `finish` takes the envelope texts the caller read from its
 * store (ask `envelopesWanted()` which), and a call whose envelope is absent is
 * listed in `skipped` as `missing-envelope`, so it runs live again.
 * `location` names the execution in those reports.
 *
 * @example
 * ```ts
 * const builder = createRecordingBuilder(`memory:${runId}`)
 * for await (const line of store.readLines(ref)) builder.add(line)
 * const texts = new Map()
 * for (const callId of builder.envelopesWanted()) texts.set(callId, await store.readArtifact(ref, ARTIFACT_KEYS.callEnvelope(callId)))
 * const recording = builder.finish((callId) => texts.get(callId))
 * ```
 */
export function createRecordingBuilder(location = 'journal lines'): {
  add(line: JournalLine): void
  /** The calls (by `callId`) whose answer is not on their journal lines: their envelopes are what `finish` needs. */
  envelopesWanted(): string[]
  finish(envelopeOf?: EnvelopeTextOf): LoadedRecording
} {
  const kept: JournalLine[] = []
  const wanted = new Set<string>()
  const indexer = new RecordingIndexer({ executionDir: location, read: (at) => kept[at] as JournalLine })
  return {
    add(line) {
      const isCallLine = line.type === 'agent_start' || line.type === 'agent_end' || line.type === 'tool_start' || line.type === 'tool_end' || line.type === 'child_start' || line.type === 'child_end'
      if (line.type === 'error' && line.callId !== undefined) wanted.add(line.callId)
      else if (line.type === 'agent_end' && line.status === 'completed' && line.answer === undefined) wanted.add(line.callId)
      if (!isCallLine) {
        indexer.add(line, -1, 0)
        return
      }
      kept.push(line)
      indexer.add(line, kept.length - 1, 0)
    },
    envelopesWanted: () => [...wanted],
    finish(envelopeOf) {
      const { rows, skipped } = indexer.finish((callId) => envelopeFromText(location, callId, envelopeOf?.(callId)))
      return new JournalRecording(indexer, rows, location, location, false, 0, skipped)
    },
  }
}

/** Parses an envelope text a store kept; what is missing or invalid is a reason to run the call again. */
function envelopeFromText(location: string, callId: string, text: string | undefined): EnvelopeRead {
  if (text === undefined) return { reason: 'missing-envelope', detail: `the call ${callId} in ${location} has no answer on its journal lines and no result envelope` }
  try {
    return { envelope: parseAgentResultEnvelope(JSON.parse(text)) }
  } catch (error) {
    return { reason: 'invalid-envelope', detail: `the result envelope of ${callId} in ${location}: ${(error as Error).message}` }
  }
}

/**
 * Builds the recording of one execution from all of its journal lines at
 * once; see {@link createRecordingBuilder}, which takes them one at a time.
 *
 * @throws {DuplicateOrdinalError} when two logical calls share an ordinal.
 * @example
 * ```ts
 * const lines = []
 * for await (const line of store.readLines({ runId, executionId: runId })) lines.push(line)
 * const recording = recordingFromLines(lines, `memory:${runId}`)
 * ```
 */
export function recordingFromLines(lines: Iterable<JournalLine>, location = 'journal lines', envelopeOf?: EnvelopeTextOf): LoadedRecording {
  const builder = createRecordingBuilder(location)
  for (const line of lines) builder.add(line)
  return builder.finish(envelopeOf)
}
