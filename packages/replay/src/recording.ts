import type { AgentResultEnvelope } from '@locus/journal'
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
import { zodProblems } from './zod-problems.js'

/** One logical `agent()` call as handed to {@link createRecording}. */
export interface RecordingEntry {
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

/** A recorded call, as a {@link Recording} hands it out. */
export interface RecordedCall {
  readonly ordinal: string
  readonly key: string
  readonly envelope: AgentResultEnvelope
  /** The canonical request (or the known part of it, see `requestFields`); `undefined` when not known. */
  readonly request: CanonicalRequest | undefined
  /** The identity fields `request` holds; empty when `request` is undefined. */
  readonly requestFields: readonly CanonicalRequestField[]
}

/** The recorded calls of one execution, keyed by ordinal. Read-only. */
export interface Recording {
  /** The call recorded at `ordinal`, or `undefined`. */
  get(ordinal: string): RecordedCall | undefined
  has(ordinal: string): boolean
  /** How many logical calls are recorded. */
  readonly size: number
  /** Every recorded call, in {@link compareOrdinals} order. */
  entries(): readonly RecordedCall[]
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
function isWellFormed(entry: RecordingEntry): boolean {
  const candidate = entry as Partial<Record<keyof RecordingEntry, unknown>> | null
  if (typeof candidate !== 'object' || candidate === null) return false
  const { ordinal, key, envelope, requestFields } = candidate
  if (typeof ordinal !== 'string' || ordinal.length === 0 || typeof key !== 'string' || key.length === 0) return false
  if (typeof envelope !== 'object' || envelope === null) return false
  const { callId, status } = envelope as { callId?: unknown; status?: unknown }
  if (typeof callId !== 'string' || (status !== 'completed' && status !== 'failed')) return false
  if (requestFields === undefined) return true
  return Array.isArray(requestFields) && requestFields.every((field) => typeof field === 'string' && KNOWN_FIELDS.has(field))
}

function toRecordedCall(entry: RecordingEntry, index: number): RecordedCall {
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
    ordinal: entry.ordinal,
    key: entry.key,
    envelope: entry.envelope,
    request,
    requestFields: request === undefined ? [] : (entry.requestFields ?? CANONICAL_REQUEST_FIELDS),
  }
}

/**
 * Builds a recording from one entry per logical `agent()` call.
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
