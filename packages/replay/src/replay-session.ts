import type { AgentResultEnvelope } from '@locus/journal'
import { z } from 'zod'
import { CANONICAL_REQUEST_FIELDS, type AgentCallRequest, type CanonicalRequest, type CanonicalRequestField, canonicalRequest } from './canonical-request.js'
import { compareOrdinals } from './compare-ordinals.js'
import { diffCanonicalRequests } from './diff-canonical-requests.js'
import type { ChildCallRecord, RecordedAgentCall, RecordedCall, Recording, ToolCallRecord } from './recording.js'
import { type ChildCallRequest, type ChildRequestField, childRequestKey, diffChildRequests } from './child-request.js'
import { OrdinalRepeatedError, ReplayOptionsError } from './replay-errors.js'
import { keyOfCanonical } from './request-key.js'
import { type ToolCallRequest, type ToolRequestField, diffToolRequests, toolRequestKey } from './tool-request.js'
import { zodProblems } from './zod-problems.js'

/**
 * Why a call runs live instead of being answered from the recording:
 * - `diverged`: this call's key differs from the recorded one; it tripped the latch.
 * - `latched`: an earlier call diverged, so every later call runs live.
 * - `not-recorded`: nothing is recorded at this ordinal (the run went further than the recording).
 * - `recorded-failure`: the recorded final attempt failed, and a resume re-runs failed calls.
 */
export const REPLAY_LIVE_REASONS = ['diverged', 'latched', 'not-recorded', 'recorded-failure'] as const
export type ReplayLiveReason = (typeof REPLAY_LIVE_REASONS)[number]

/**
 * A field a divergence can name: an agent call's identity field, a tool
 * call's (`tool`, `args`), or `kind` when an agent call stands where a tool
 * call was recorded, or the other way round.
 */
export type ReplayField = CanonicalRequestField | ToolRequestField | ChildRequestField | 'kind'

/** The first call whose request key differed from the recording. Reported once per session. */
export interface ReplayDivergence {
  readonly ordinal: string
  /** The key the recording holds at this ordinal. */
  readonly expectedKey: string
  /** The key of the call the run made instead. */
  readonly actualKey: string
  /**
   * The identity fields that differ, as far as the recording kept the request.
   * Empty when the recording kept no request, or when the difference lies in
   * a field it did not keep.
   */
  readonly fields: readonly ReplayField[]
}

/** Answer the call from the recording: do not call the host. */
export interface ReplayFromRecording {
  readonly mode: 'replay'
  /** The recorded envelope of the call's final attempt. */
  readonly envelope: AgentResultEnvelope
  /** The call's request key (equal to the recorded one). */
  readonly key: string
}

/** Run the call for real. */
export interface RunLive {
  readonly mode: 'live'
  readonly reason: ReplayLiveReason
  /** The call's request key, for its `agent_start` line. */
  readonly key: string
}

/** Answer a tool call from the recording: do not run the tool. */
export interface ToolReplayFromRecording {
  readonly mode: 'replay'
  /** How the recorded call's final attempt ended: its result, or its failure. */
  readonly record: ToolCallRecord
  readonly key: string
}

/** Answer a child workflow spawn from the recording: do not run the child. */
export interface ChildReplayFromRecording {
  readonly mode: 'replay'
  /** How the recorded spawn's final attempt ended: the child's result, or its failure. */
  readonly record: ChildCallRecord
  readonly key: string
}

/** What {@link ReplaySession.next} decided for one child workflow spawn. */
export type ChildReplayDecision = ChildReplayFromRecording | RunLive

/** One child workflow spawn of the workflow script as the runtime asks about it. */
export interface ChildReplayCall {
  readonly kind: 'child'
  /** The spawn's position in the group tree, taken from the same slot as agent and tool calls. */
  readonly ordinal: string
  /** The workflow's name and its detached input. */
  readonly request: ChildCallRequest
}

/** What {@link ReplaySession.next} decided for one logical `agent()` call. */
export type ReplayDecision = ReplayFromRecording | RunLive

/** What {@link ReplaySession.next} decided for one logical `tool()` call. */
export type ToolReplayDecision = ToolReplayFromRecording | RunLive

/** One logical `agent()` call as the runtime asks about it. */
export interface ReplayCall {
  readonly kind?: 'agent' | undefined
  /** The call's position in the group tree; the same for all its attempts. */
  readonly ordinal: string
  /** The call's options; only the identity fields are compared. */
  readonly request: AgentCallRequest
}

/** One logical `tool()` call of the workflow script as the runtime asks about it. */
export interface ToolReplayCall {
  readonly kind: 'tool'
  /** The call's position in the group tree, taken from the same slot as agent calls. */
  readonly ordinal: string
  /** The tool's name and its detached arguments. */
  readonly request: ToolCallRequest
}

export interface ReplaySessionOptions {
  /**
   * Replay recorded calls whose final attempt failed, instead of running them
   * live. Off for a resume (which re-runs what failed); on for a pure
   * determinism check, where the failure is part of what is replayed.
   * @default false
   */
  readonly replayFailures?: boolean | undefined
  /**
   * Called once, synchronously, when the latch trips, so the runtime can
   * journal `replay_diverged`. The latch is already set when it runs; an error
   * it throws reaches the caller of `next()`.
   */
  readonly onDiverged?: ((divergence: ReplayDivergence) => void) | undefined
}

/** How a recorded call fared: its key was asked for and `matched`, asked for and `diverged`, or never asked for (`missing`). */
export const REPLAY_CALL_STATUSES = ['matched', 'diverged', 'missing'] as const
export type ReplayCallStatus = (typeof REPLAY_CALL_STATUSES)[number]

/** One recorded call in a {@link ReplayReport}. */
export interface ReplayReportCall {
  readonly ordinal: string
  /** Keys are compared for every call that was asked for, also after the latch tripped. */
  readonly status: ReplayCallStatus
  readonly expectedKey: string
  /** The key the run asked with; absent when `missing`. */
  readonly actualKey?: string
  /** The differing identity fields, when `diverged` (see {@link ReplayDivergence.fields}). */
  readonly fields?: readonly ReplayField[]
  /** How the call was served; absent when `missing`. */
  readonly decision?: 'replay' | ReplayLiveReason
}

/** A call the run asked for at an ordinal the recording does not hold. */
export interface ReplayExtraCall {
  readonly ordinal: string
  readonly key: string
}

/**
 * Per-call result of a replay: it reports rather than throws. `identical` is
 * the one-line answer of a determinism check.
 */
export interface ReplayReport {
  /** The divergence that tripped the latch, or `null`. */
  readonly divergence: ReplayDivergence | null
  /** Every recorded call, in ordinal order. */
  readonly calls: readonly ReplayReportCall[]
  /** Calls asked for that were not recorded, in ordinal order. */
  readonly extra: readonly ReplayExtraCall[]
  readonly counts: {
    readonly matched: number
    readonly diverged: number
    readonly missing: number
    readonly extra: number
    /** Calls answered from the recording. */
    readonly replayed: number
    /** Calls that ran live, for any reason. */
    readonly live: number
  }
  /** True when every recorded call was asked for with its recorded key and no other call was made. */
  readonly identical: boolean
}

/** A replay over one recording. Not reusable: make a new session for each run. */
export interface ReplaySession {
  /**
   * Decides one logical call: replay its recorded envelope while keys match,
   * or run it live. The first key mismatch trips a one-way latch; that call
   * and every later one run live.
   * @throws {OrdinalRepeatedError} when the ordinal was asked for before.
   * @throws {CanonicalRequestError} when the request's identity fields are invalid.
   */
  next(call: ReplayCall): ReplayDecision
  /** Decides one logical `tool()` call under the same latch and positions as agent calls. */
  next(call: ToolReplayCall): ToolReplayDecision
  /** Decides one child workflow spawn under the same latch and positions as agent and tool calls. */
  next(call: ChildReplayCall): ChildReplayDecision
  /** The divergence that tripped the latch, or `null` while none has. */
  readonly divergence: ReplayDivergence | null
  /** True once the latch has tripped; it never resets. */
  readonly latched: boolean
  /** The per-call report so far (call it after the run for the full picture). */
  report(): ReplayReport
}

const OptionsSchema = z.object(
  {
    replayFailures: z.boolean('replayFailures must be true or false').optional(),
    onDiverged: z
      .custom<(divergence: ReplayDivergence) => void>((value) => typeof value === 'function', 'onDiverged must be a function')
      .optional(),
  },
  'options must be an object',
)

const OrdinalSchema = z.string('ordinal must be a string').min(1, 'ordinal must not be empty')

/**
 * The fields a recorded request really covers. A partial request (what a
 * journal line keeps) whose own key equals the recorded key is the whole
 * request: the fields it lacks were absent, so they can be compared too.
 */
function knownFields(entry: RecordedAgentCall): readonly CanonicalRequestField[] {
  if (entry.request === undefined) return []
  if (entry.requestFields.length === CANONICAL_REQUEST_FIELDS.length) return entry.requestFields
  return keyOfCanonical(entry.request) === entry.key ? CANONICAL_REQUEST_FIELDS : entry.requestFields
}

/** What the session keeps of a call replayed with its recorded key: nothing of its own. */
const REPLAYED: AskedCall = Object.freeze({ key: undefined, decision: 'replay', fields: undefined })

interface AskedCall {
  /** The key the call was asked with; `undefined` when it was the recorded key (kept once, in the recording). */
  readonly key: string | undefined
  readonly decision: 'replay' | ReplayLiveReason
  readonly fields: readonly ReplayField[] | undefined
}

/**
 * Starts a replay over a recording. While the run's calls produce the
 * recorded keys, each recorded call is answered with its recorded envelope
 * and the host is not called. The first mismatch is the divergence: it is
 * reported once (as `session.divergence` and through `onDiverged`), and from
 * then on every call runs live, the recorded suffix included; the latch never
 * resets. A recorded call whose final attempt failed runs live without
 * tripping the latch (unless `replayFailures`), and a call past the end of the
 * recording runs live without tripping it either.
 *
 * @example
 * ```ts
 * const session = createReplaySession(recording, { onDiverged: (divergence) => journal.append({ type: 'replay_diverged', ...divergence }) })
 * const decision = session.next({ ordinal: '1', request: { agent: 'analyst', prompt } })
 * if (decision.mode === 'replay') return decision.envelope
 * ```
 */
export function createReplaySession(recording: Recording, options: ReplaySessionOptions = {}): ReplaySession {
  const parsedOptions = OptionsSchema.safeParse(options)
  if (!parsedOptions.success) throw new ReplayOptionsError(zodProblems(parsedOptions.error, 'options'), parsedOptions.error)
  const replayFailures = options.replayFailures ?? false
  const onDiverged = options.onDiverged
  const asked = new Map<string, AskedCall>()
  let divergence: ReplayDivergence | null = null

  type AnyCall = ReplayCall | ToolReplayCall | ChildReplayCall
  type AnyCanonical = CanonicalRequest | ToolCallRequest | ChildCallRequest

  function keyOf(call: AnyCall): { key: string; canonical: AnyCanonical } {
    if (call.kind === 'tool') return { key: toolRequestKey(call.request), canonical: call.request }
    if (call.kind === 'child') return { key: childRequestKey(call.request), canonical: call.request }
    const canonical = canonicalRequest(call.request)
    return { key: keyOfCanonical(canonical), canonical }
  }

  function fieldsIfDiffering(entry: RecordedCall, call: AnyCall, key: string, canonical: AnyCanonical): readonly ReplayField[] | undefined {
    if (entry.key === key) return undefined
    if (entry.kind !== (call.kind ?? 'agent')) return ['kind']
    if (entry.request === undefined) return []
    if (entry.kind === 'tool') return diffToolRequests(entry.request, canonical as ToolCallRequest)
    if (entry.kind === 'child') return diffChildRequests(entry.request, canonical as ChildCallRequest)
    return diffCanonicalRequests(entry.request, canonical as CanonicalRequest, knownFields(entry))
  }

  function next(call: ReplayCall): ReplayDecision
  function next(call: ToolReplayCall): ToolReplayDecision
  function next(call: ChildReplayCall): ChildReplayDecision
  function next(call: AnyCall): ReplayDecision | ToolReplayDecision | ChildReplayDecision {
    if (typeof call !== 'object' || (call as unknown) === null) {
      throw new ReplayOptionsError([{ field: 'call', message: 'next() takes { ordinal, request }' }])
    }
    if (typeof call.ordinal !== 'string' || call.ordinal.length === 0) {
      const ordinalCheck = OrdinalSchema.safeParse(call.ordinal)
      throw new ReplayOptionsError(
        ordinalCheck.success ? [{ field: 'ordinal', message: 'ordinal must be a non-empty string' }] : zodProblems(ordinalCheck.error, 'ordinal'),
        ordinalCheck.error,
      )
    }
    const { ordinal } = call
    if (asked.has(ordinal)) throw new OrdinalRepeatedError(ordinal)
    const { key, canonical } = keyOf(call)
    const recorded = recording.get(ordinal)

    let decision: ReplayDecision | ToolReplayDecision | ChildReplayDecision
    if (divergence !== null) {
      decision = { mode: 'live', reason: 'latched', key }
      asked.set(ordinal, { key, decision: 'latched', fields: recorded === undefined ? undefined : fieldsIfDiffering(recorded, call, key, canonical) })
    } else if (recorded === undefined) {
      decision = { mode: 'live', reason: 'not-recorded', key }
      asked.set(ordinal, { key, decision: 'not-recorded', fields: undefined })
    } else if (recorded.key !== key) {
      const fields = fieldsIfDiffering(recorded, call, key, canonical) ?? []
      divergence = Object.freeze({ ordinal, expectedKey: recorded.key, actualKey: key, fields })
      decision = { mode: 'live', reason: 'diverged', key }
      asked.set(ordinal, { key, decision: 'diverged', fields })
      onDiverged?.(divergence)
    } else if ((recorded.kind === 'agent' ? recorded.envelope.status : recorded.record.status) === 'failed' && !replayFailures) {
      decision = { mode: 'live', reason: 'recorded-failure', key }
      asked.set(ordinal, { key, decision: 'recorded-failure', fields: undefined })
    } else {
      decision =
        recorded.kind === 'agent'
          ? { mode: 'replay', envelope: recorded.envelope, key }
          : recorded.kind === 'tool'
            ? { mode: 'replay', record: recorded.record, key }
            : { mode: 'replay', record: recorded.record, key }
      asked.set(ordinal, REPLAYED)
    }
    return decision
  }

  function report(): ReplayReport {
    const calls: ReplayReportCall[] = []
    let matched = 0
    let diverged = 0
    let missing = 0
    let replayed = 0
    // Keys only: a recording read from a journal does not read every answer back for a report.
    for (const entry of recording.keys?.() ?? recording.entries()) {
      const seen = asked.get(entry.ordinal)
      if (seen === undefined) {
        missing += 1
        calls.push({ ordinal: entry.ordinal, status: 'missing', expectedKey: entry.key })
        continue
      }
      if (seen.decision === 'replay') replayed += 1
      const actualKey = seen.key ?? entry.key
      if (actualKey === entry.key) {
        matched += 1
        calls.push({ ordinal: entry.ordinal, status: 'matched', expectedKey: entry.key, actualKey, decision: seen.decision })
      } else {
        diverged += 1
        calls.push({
          ordinal: entry.ordinal,
          status: 'diverged',
          expectedKey: entry.key,
          actualKey,
          fields: seen.fields ?? [],
          decision: seen.decision,
        })
      }
    }
    const extra: ReplayExtraCall[] = []
    for (const [ordinal, seen] of asked) {
      if (!recording.has(ordinal)) extra.push({ ordinal, key: seen.key ?? '' })
    }
    extra.sort((left, right) => compareOrdinals(left.ordinal, right.ordinal))
    return {
      divergence,
      calls,
      extra,
      counts: { matched, diverged, missing, extra: extra.length, replayed, live: asked.size - replayed },
      identical: diverged === 0 && missing === 0 && extra.length === 0,
    }
  }

  return {
    next,
    report,
    get divergence() {
      return divergence
    },
    get latched() {
      return divergence !== null
    },
  }
}
