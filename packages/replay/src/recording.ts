import type { AgentResultEnvelope } from '@locus/journal'
import type { JsonValue } from '@locus/outcome'
import { z } from 'zod'
import {
  CANONICAL_REQUEST_FIELDS,
  type AgentCallRequest,
  type CanonicalRequest,
  type CanonicalRequestField,
  canonicalRequest,
} from './canonical-request.js'
import { compareOrdinals } from './compare-ordinals.js'
import { CanonicalRequestError, DuplicateOrdinalError, RecordingEntryError } from './replay-errors.js'
import { type ToolCallRequest, TOOL_REQUEST_FIELDS, type ToolRequestField } from './tool-request.js'
import { CHILD_REQUEST_FIELDS, type ChildCallRequest, type ChildRequestField } from './child-request.js'
import { zodProblems } from './zod-problems.js'

/** One logical `agent()` call as handed to {@link createRecording}. */
export interface AgentRecordingEntry {
  /** Absent means an agent call, as in recordings made before tool calls were recorded. */
  readonly kind?: 'agent' | undefined
  /** The call's position in the group tree, e.g. `"2[3].1"`; an opaque key shared by all its attempts. */
  readonly ordinal: string
  /** The call's `requestKey`. It is what replay compares; `request` only explains a mismatch. */
  readonly key: string
  /** The result envelope of the call's FINAL attempt. Discarded attempts are never recorded. */
  readonly envelope: AgentResultEnvelope
  /** The canonical request, when known, so a divergence can name the fields that differ. */
  readonly request?: AgentCallRequest | undefined
  /**
   * The identity fields `request` really holds, when it holds only some of
   * them (a journal line keeps `agent`, `prompt` and `timeoutMs`, not budgets).
   * Fields outside this list are never reported as differing.
   * @default CANONICAL_REQUEST_FIELDS
   */
  readonly requestFields?: readonly CanonicalRequestField[] | undefined
}

/** How the final attempt of a recorded `tool()` call ended. */
export interface ToolCallRecord {
  /** The call's `toolCallId`. */
  readonly callId: string
  readonly tool: string
  readonly status: 'completed' | 'failed'
  /** The final attempt's number and the policy's attempt budget. */
  readonly attempt: number
  readonly maxAttempts: number
  /** The detached result of a completed call. */
  readonly result?: JsonValue
  /** Why the final attempt failed, as its `tool_end` line says. */
  readonly failure?: { readonly error: string; readonly retryable: boolean; readonly code?: string | undefined }
  /** True when the final attempt ran out of its own time rather than failing. */
  readonly timedOut?: boolean
}

/** One logical `tool()` call of the workflow script as handed to {@link createRecording}. */
export interface ToolRecordingEntry {
  readonly kind: 'tool'
  readonly ordinal: string
  /** The call's key from `toolRequestKey`. */
  readonly key: string
  readonly record: ToolCallRecord
  /** The request, when known, so a divergence can name `tool` or `args`. */
  readonly request?: ToolCallRequest | undefined
}

/** How the final attempt of a recorded child workflow spawn ended. */
export interface ChildCallRecord {
  /** The spawn's `childCallId`. */
  readonly callId: string
  readonly workflow: string
  readonly status: 'completed' | 'failed'
  readonly attempt: number
  readonly maxAttempts: number
  /** The execution the final attempt's child run wrote to. */
  readonly childExecutionId: string
  /** The child run's disposition, when it ended. */
  readonly disposition?: 'completed' | 'failed' | 'cancelled' | undefined
  /** The child's detached result (or failure envelope). */
  readonly result?: JsonValue
  readonly failure?: { readonly error: string; readonly retryable: boolean; readonly code?: string | undefined }
  readonly timedOut?: boolean
}

/** One child workflow spawn of the workflow script as handed to {@link createRecording}. */
export interface ChildRecordingEntry {
  readonly kind: 'child'
  readonly ordinal: string
  /** The spawn's key from `childRequestKey`. */
  readonly key: string
  readonly record: ChildCallRecord
  readonly request?: ChildCallRequest | undefined
}

/** One logical call, an agent's, a tool's or a spawn's, as handed to {@link createRecording}. */
export type RecordingEntry = AgentRecordingEntry | ToolRecordingEntry | ChildRecordingEntry

/** A recorded `agent()` call, as a {@link Recording} hands it out. */
export interface RecordedAgentCall {
  readonly kind: 'agent'
  readonly ordinal: string
  readonly key: string
  readonly envelope: AgentResultEnvelope
  /** The canonical request (or the known part of it, see `requestFields`); `undefined` when not known. */
  readonly request: CanonicalRequest | undefined
  /** The identity fields `request` holds; empty when `request` is undefined. */
  readonly requestFields: readonly CanonicalRequestField[]
}

/** A recorded `tool()` call, as a {@link Recording} hands it out. */
export interface RecordedToolCall {
  readonly kind: 'tool'
  readonly ordinal: string
  readonly key: string
  readonly record: ToolCallRecord
  readonly request: ToolCallRequest | undefined
  /** The identity fields `request` holds; empty when `request` is undefined. */
  readonly requestFields: readonly ToolRequestField[]
}

/** A recorded child workflow spawn, as a {@link Recording} hands it out. */
export interface RecordedChildCall {
  readonly kind: 'child'
  readonly ordinal: string
  readonly key: string
  readonly record: ChildCallRecord
  readonly request: ChildCallRequest | undefined
  /** The identity fields `request` holds; empty when `request` is undefined. */
  readonly requestFields: readonly ChildRequestField[]
}

/** A recorded call; narrow on `kind`. */
export type RecordedCall = RecordedAgentCall | RecordedToolCall | RecordedChildCall

/** The recorded calls of one execution, keyed by ordinal. Read-only. */
export interface Recording {
  /** The call recorded at `ordinal`, or `undefined`. */
  get(ordinal: string): RecordedCall | undefined
  has(ordinal: string): boolean
  /** How many logical calls are recorded. */
  readonly size: number
  /** Every recorded call, in {@link compareOrdinals} order. */
  entries(): readonly RecordedCall[]
  /**
   * Every recorded call's kind, ordinal and key, in {@link compareOrdinals}
   * order, without its answer. A recording read from a journal keeps only
   * this much in memory and reads a call's answer back when it is asked for,
   * so this is the cheap way to walk it. Optional: without it, readers use
   * `entries()`.
   */
  keys?(): readonly RecordedKey[]
  /**
   * Lets go of what the recording holds open (a journal file it reads answers
   * back from). It can still be read afterwards; it opens the file again.
   */
  close?(): void
}

/** What a recording keeps of a call in memory: enough to compare, not to answer. */
export interface RecordedKey {
  readonly kind: RecordedCall['kind']
  readonly ordinal: string
  readonly key: string
}

/** Where an {@link IndexedRecording} finds its calls: rows of one execution's journal. */
export interface IndexedCalls {
  kindOf(row: number): RecordedCall['kind']
  keyOf(row: number): string
  /** Reads the whole call back, when a replay asks for it. */
  materialize(row: number): RecordedCall
  close?(): void
}

/** Rows per source in an {@link IndexedRecording}'s locator: a locator is `source * ROWS_PER_SOURCE + row`. */
export const ROWS_PER_SOURCE = 2 ** 26

/**
 * A recording that holds each call's key and reads its answer back only when
 * asked: its size in memory does not depend on how large the answers are.
 * `loadRecording` builds one from a journal; `mergeRecordings` keeps one.
 */
export class IndexedRecording implements Recording {
  readonly #sources: readonly IndexedCalls[]
  /** Ordinal to `source * ROWS_PER_SOURCE + row`. */
  readonly #rows: ReadonlyMap<string, number>

  /** `rows` maps each recorded ordinal to `source * 2 ** 26 + row`, its row in one of `sources`. */
  constructor(sources: readonly IndexedCalls[], rows: ReadonlyMap<string, number>) {
    this.#sources = sources
    this.#rows = rows
  }

  /** Combines indexed recordings, oldest first; at an ordinal recorded more than once the later one wins. */
  static merge(recordings: readonly IndexedRecording[]): IndexedRecording {
    const sources: IndexedCalls[] = []
    const rows = new Map<string, number>()
    for (const recording of recordings) {
      const offset = sources.length * ROWS_PER_SOURCE
      for (const [ordinal, locator] of recording.#rows) rows.set(ordinal, offset + locator)
      sources.push(...recording.#sources)
    }
    return new IndexedRecording(sources, rows)
  }

  get(ordinal: string): RecordedCall | undefined {
    const locator = this.#rows.get(ordinal)
    return locator === undefined ? undefined : this.#materialize(locator)
  }

  has(ordinal: string): boolean {
    return this.#rows.has(ordinal)
  }

  get size(): number {
    return this.#rows.size
  }

  entries(): readonly RecordedCall[] {
    return Object.freeze(this.#ordered().map(([, locator]) => this.#materialize(locator)))
  }

  keys(): readonly RecordedKey[] {
    return Object.freeze(
      this.#ordered().map(([ordinal, locator]) => {
        const source = this.#sources[Math.floor(locator / ROWS_PER_SOURCE)] as IndexedCalls
        const row = locator % ROWS_PER_SOURCE
        return { kind: source.kindOf(row), ordinal, key: source.keyOf(row) }
      }),
    )
  }

  close(): void {
    for (const source of this.#sources) source.close?.()
  }

  #ordered(): [string, number][] {
    return [...this.#rows].sort((left, right) => compareOrdinals(left[0], right[0]))
  }

  #materialize(locator: number): RecordedCall {
    return (this.#sources[Math.floor(locator / ROWS_PER_SOURCE)] as IndexedCalls).materialize(locator % ROWS_PER_SOURCE)
  }
}

const EntrySchema = z.object({
  ordinal: z.string('ordinal must be a string').min(1, 'ordinal must not be empty'),
  key: z.string('key must be a string').min(1, 'key must not be empty'),
  envelope: z.looseObject(
    {
      callId: z.string('envelope.callId must be a string'),
      status: z.enum(['completed', 'failed'], 'envelope.status must be "completed" or "failed"'),
    },
    'envelope must be the result envelope object of the final attempt',
  ),
  requestFields: z.array(z.enum(CANONICAL_REQUEST_FIELDS)).optional(),
})

const KNOWN_FIELDS: ReadonlySet<string> = new Set(CANONICAL_REQUEST_FIELDS)

/** The checks of `EntrySchema` by hand: a recording of a long run builds many entries, and zod only has to explain a failure. */
function isWellFormed(entry: AgentRecordingEntry): boolean {
  const candidate = entry as Partial<Record<keyof AgentRecordingEntry, unknown>> | null
  if (typeof candidate !== 'object' || candidate === null) return false
  const { ordinal, key, envelope, requestFields } = candidate
  if (typeof ordinal !== 'string' || ordinal.length === 0 || typeof key !== 'string' || key.length === 0) return false
  if (typeof envelope !== 'object' || envelope === null) return false
  const { callId, status } = envelope as { callId?: unknown; status?: unknown }
  if (typeof callId !== 'string' || (status !== 'completed' && status !== 'failed')) return false
  if (requestFields === undefined) return true
  return Array.isArray(requestFields) && requestFields.every((field) => typeof field === 'string' && KNOWN_FIELDS.has(field))
}

const ToolEntrySchema = z.object({
  kind: z.literal('tool'),
  ordinal: z.string('ordinal must be a string').min(1, 'ordinal must not be empty'),
  key: z.string('key must be a string').min(1, 'key must not be empty'),
  record: z.looseObject(
    {
      callId: z.string('record.callId must be a string').min(1, 'record.callId must not be empty'),
      tool: z.string('record.tool must be a string').min(1, 'record.tool must not be empty'),
      status: z.enum(['completed', 'failed'], 'record.status must be "completed" or "failed"'),
    },
    'record must describe the final attempt of the tool call',
  ),
  request: z.object({ tool: z.string().min(1, 'request.tool must not be empty'), args: z.unknown() }, 'request must be { tool, args }').optional(),
})

function toRecordedToolCall(entry: ToolRecordingEntry, index: number): RecordedToolCall {
  const parsed = ToolEntrySchema.safeParse(entry)
  if (!parsed.success) throw new RecordingEntryError(index, zodProblems(parsed.error, 'entry'), parsed.error)
  return {
    kind: 'tool',
    ordinal: entry.ordinal,
    key: entry.key,
    record: entry.record,
    request: entry.request,
    requestFields: entry.request === undefined ? [] : TOOL_REQUEST_FIELDS,
  }
}

const ChildEntrySchema = z.object({
  kind: z.literal('child'),
  ordinal: z.string('ordinal must be a string').min(1, 'ordinal must not be empty'),
  key: z.string('key must be a string').min(1, 'key must not be empty'),
  record: z.looseObject(
    {
      callId: z.string('record.callId must be a string').min(1, 'record.callId must not be empty'),
      workflow: z.string('record.workflow must be a string').min(1, 'record.workflow must not be empty'),
      status: z.enum(['completed', 'failed'], 'record.status must be "completed" or "failed"'),
      childExecutionId: z.string('record.childExecutionId must be a string').min(1, 'record.childExecutionId must not be empty'),
    },
    'record must describe the final attempt of the spawn',
  ),
  request: z.object({ workflow: z.string().min(1, 'request.workflow must not be empty'), input: z.unknown() }, 'request must be { workflow, input }').optional(),
})

function toRecordedChildCall(entry: ChildRecordingEntry, index: number): RecordedChildCall {
  const parsed = ChildEntrySchema.safeParse(entry)
  if (!parsed.success) throw new RecordingEntryError(index, zodProblems(parsed.error, 'entry'), parsed.error)
  return {
    kind: 'child',
    ordinal: entry.ordinal,
    key: entry.key,
    record: entry.record,
    request: entry.request,
    requestFields: entry.request === undefined ? [] : CHILD_REQUEST_FIELDS,
  }
}

/** Checks one entry and turns it into the call a recording hands out. @internal */
export function toRecordedCall(given: RecordingEntry, index: number): RecordedCall {
  if (typeof given === 'object' && (given as unknown) !== null && given.kind === 'tool') return toRecordedToolCall(given, index)
  if (typeof given === 'object' && (given as unknown) !== null && given.kind === 'child') return toRecordedChildCall(given, index)
  const entry = given as AgentRecordingEntry
  if (!isWellFormed(entry)) {
    const parsed = EntrySchema.safeParse(entry)
    const problems = parsed.success ? [{ field: 'entry', message: 'must be { ordinal, key, envelope, request?, requestFields? }' }] : zodProblems(parsed.error, 'entry')
    throw new RecordingEntryError(index, problems, parsed.error)
  }
  let request: CanonicalRequest | undefined
  if (entry.request !== undefined) {
    try {
      request = canonicalRequest(entry.request)
    } catch (error) {
      if (!CanonicalRequestError.isInstance(error)) throw error
      const problems = error.problems.map((problem) => ({ ...problem, field: `request.${problem.field}` }))
      throw new RecordingEntryError(index, problems, error)
    }
  }
  return {
    kind: 'agent',
    ordinal: entry.ordinal,
    key: entry.key,
    envelope: entry.envelope,
    request,
    requestFields: request === undefined ? [] : (entry.requestFields ?? CANONICAL_REQUEST_FIELDS),
  }
}

/**
 * Builds a recording from one entry per logical call: each `agent()` call
 * and each `tool()` call the workflow script made (a child's tool calls stay
 * under their agent call and are never entries of their own).
 *
 * @throws {DuplicateOrdinalError} code `REPLAY_DUPLICATE_ORDINAL`, naming the
 * ordinal, when two entries share one.
 * @throws {RecordingEntryError} code `REPLAY_RECORDING_INVALID` for a malformed entry.
 *
 * @example
 * ```ts
 * const recording = createRecording([{ ordinal: '1', key: requestKey(call), envelope, request: call }])
 * recording.get('1')?.envelope.status // => 'completed'
 * ```
 */
export function createRecording(entries: Iterable<RecordingEntry>): Recording {
  const byOrdinal = new Map<string, RecordedCall>()
  let index = 0
  for (const entry of entries) {
    const call = toRecordedCall(entry, index)
    if (byOrdinal.has(call.ordinal)) throw new DuplicateOrdinalError(call.ordinal)
    byOrdinal.set(call.ordinal, call)
    index += 1
  }
  let ordered: readonly RecordedCall[] | undefined
  return {
    get: (ordinal) => byOrdinal.get(ordinal),
    has: (ordinal) => byOrdinal.has(ordinal),
    size: byOrdinal.size,
    entries() {
      ordered ??= Object.freeze([...byOrdinal.values()].sort((left, right) => compareOrdinals(left.ordinal, right.ordinal)))
      return ordered
    },
  }
}

/** The entry a recorded call was built from, so recordings can be combined. */
function entryOf(call: RecordedCall): RecordingEntry {
  if (call.kind === 'child') {
    return { kind: 'child', ordinal: call.ordinal, key: call.key, record: call.record, ...(call.request === undefined ? {} : { request: call.request }) }
  }
  if (call.kind === 'tool') {
    return { kind: 'tool', ordinal: call.ordinal, key: call.key, record: call.record, ...(call.request === undefined ? {} : { request: call.request }) }
  }
  return {
    ordinal: call.ordinal,
    key: call.key,
    envelope: call.envelope,
    ...(call.request === undefined ? {} : { request: call.request, requestFields: call.requestFields }),
  }
}

/**
 * Combines the recordings of several executions of one run, oldest first: at
 * an ordinal recorded more than once, the later execution's call wins (a
 * resume that re-ran a failed call recorded its new outcome there).
 *
 * @example
 * ```ts
 * const recording = mergeRecordings([loadRecording(rootJournal), loadRecording(resumeJournal)])
 * ```
 */
export function mergeRecordings(recordings: Iterable<Recording>): Recording {
  const given = [...recordings]
  // Merge the indexes, so the answers stay where they are until a replay asks for them.
  if (given.every((recording) => recording instanceof IndexedRecording)) return IndexedRecording.merge(given)
  const byOrdinal = new Map<string, RecordedCall>()
  for (const recording of given) for (const call of recording.entries()) byOrdinal.set(call.ordinal, call)
  return createRecording([...byOrdinal.values()].map(entryOf))
}
