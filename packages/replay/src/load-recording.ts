import {
  AGENT_RESULT_SCHEMA,
  type AgentEndLine,
  type AgentResultEnvelope,
  type AgentStartLine,
  type ChildEndLine,
  type ChildStartLine,
  type JournalLine,
  type JournalReadResult,
  type ToolEndLine,
  type ToolStartLine,
  RUN_LAYOUT,
  parseAgentResultEnvelope,
  readJournal,
  validateRunId,
} from '@locus/journal'
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { CanonicalRequest, CanonicalRequestField } from './canonical-request.js'
import { type Recording, type RecordingEntry, createRecording } from './recording.js'
import { RecordingUnreadableError } from './replay-errors.js'

/** The file the runtime writes a call attempt's result envelope to, inside its result directory. */
const ENVELOPE_FILE = 'result.json'

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

interface AttemptSeen {
  readonly start: AgentStartLine
  terminal: boolean
  /** The attempt's agent_end, when it answered or failed rather than threw. */
  end?: AgentEndLine
}

interface LogicalCallSeen {
  readonly logicalCallId: string
  /** Attempts by attempt number. */
  readonly attempts: Map<number, AttemptSeen>
}

function groupLogicalCalls(journal: JournalReadResult): LogicalCallSeen[] {
  const calls = new Map<string, LogicalCallSeen>()
  const attemptsByCallId = new Map<string, AttemptSeen>()
  for (const line of journal.lines) {
    if (line.type === 'agent_start') {
      let call = calls.get(line.logicalCallId)
      if (call === undefined) {
        call = { logicalCallId: line.logicalCallId, attempts: new Map() }
        calls.set(line.logicalCallId, call)
      }
      if (attemptsByCallId.has(line.callId)) continue
      const attempt: AttemptSeen = { start: line, terminal: false }
      call.attempts.set(line.attempt, attempt)
      attemptsByCallId.set(line.callId, attempt)
    } else if (line.type === 'agent_end' || (line.type === 'error' && line.callId !== undefined)) {
      // An attempt that threw ends with an `error` line instead of `agent_end`; both are terminal.
      const attempt = line.callId === undefined ? undefined : attemptsByCallId.get(line.callId)
      if (attempt !== undefined) {
        attempt.terminal = true
        if (line.type === 'agent_end') attempt.end = line
      }
    }
  }
  return [...calls.values()]
}

function finalAttempt(call: LogicalCallSeen): AttemptSeen {
  let final: AttemptSeen | undefined
  for (const [number, attempt] of call.attempts) {
    if (final === undefined || number > final.start.attempt) final = attempt
  }
  // A logical call exists only because an agent_start created it, so there is at least one attempt.
  return final as AttemptSeen
}

function readEnvelope(
  executionDir: string,
  callId: string,
): { envelope: AgentResultEnvelope } | { reason: 'missing-envelope' | 'invalid-envelope'; detail: string } {
  let path: string
  try {
    path = join(executionDir, RUN_LAYOUT.calls, validateRunId(callId, 'callId'), RUN_LAYOUT.callResult, ENVELOPE_FILE)
  } catch (error) {
    return { reason: 'missing-envelope', detail: (error as Error).message }
  }
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    return { reason: 'missing-envelope', detail: `${path} cannot be read: ${(error as Error).message}` }
  }
  try {
    return { envelope: parseAgentResultEnvelope(JSON.parse(text)) }
  } catch (error) {
    return { reason: 'invalid-envelope', detail: `${path}: ${(error as Error).message}` }
  }
}

/**
 * Builds the envelope of a call from its journal lines when they hold the
 * whole result: a failed agent_end, or a completed one that carries its
 * answer. Reading one file per call would otherwise dominate loading a long
 * run; older journals without `answer` fall back to the envelope files.
 */
function envelopeFromJournal(executionDir: string, start: AgentStartLine, end: AgentEndLine): AgentResultEnvelope | undefined {
  if (end.status === 'completed' && end.answer === undefined) return undefined
  const callDir = join(executionDir, RUN_LAYOUT.calls, start.callId)
  const common = {
    schema: AGENT_RESULT_SCHEMA,
    callId: start.callId,
    logicalCallId: start.logicalCallId,
    attempt: start.attempt,
    attempts: start.attempts,
    agent: start.agent,
    ordinal: start.ordinal,
    ...(start.requestKey === undefined ? {} : { requestKey: start.requestKey }),
    ...(end.stopReason === undefined ? {} : { stopReason: end.stopReason }),
    ...(end.usage === undefined ? {} : { usage: end.usage }),
    paths: { transcriptDir: join(callDir, RUN_LAYOUT.transcript), resultDir: join(callDir, RUN_LAYOUT.callResult) },
  } as const
  if (end.status === 'completed') return { ...common, status: 'completed', ...(end.answer === undefined ? {} : { answer: end.answer }) }
  return { ...common, status: 'failed', failureCause: end.failureCause ?? 'unclassified', ...(end.reason === undefined ? {} : { reason: end.reason }) }
}

function journaledRequest(start: AgentStartLine): CanonicalRequest {
  return start.timeoutMs === undefined
    ? { agent: start.agent, prompt: start.prompt }
    : { agent: start.agent, prompt: start.prompt, timeoutMs: start.timeoutMs }
}

interface ToolCallSeen {
  readonly toolCallId: string
  /** Each attempt's start line and, once it settled, its end line, by attempt number. */
  readonly attempts: Map<number, { start: ToolStartLine; end?: ToolEndLine }>
}

/** The tool calls the workflow script made itself (they carry an ordinal), in journal order. */
function groupToolCalls(journal: JournalReadResult): ToolCallSeen[] {
  const calls = new Map<string, ToolCallSeen>()
  for (const line of journal.lines) {
    if (line.type === 'tool_start') {
      if (line.ordinal === undefined || line.parentCallId !== undefined) continue
      let call = calls.get(line.toolCallId)
      if (call === undefined) {
        call = { toolCallId: line.toolCallId, attempts: new Map() }
        calls.set(line.toolCallId, call)
      }
      if (!call.attempts.has(line.attempt)) call.attempts.set(line.attempt, { start: line })
    } else if (line.type === 'tool_end') {
      const attempt = calls.get(line.toolCallId)?.attempts.get(line.attempt)
      if (attempt !== undefined) attempt.end = line
    }
  }
  return [...calls.values()]
}

function toolEntry(call: ToolCallSeen): { entry: RecordingEntry } | { skipped: SkippedCall } {
  let final: { start: ToolStartLine; end?: ToolEndLine } | undefined
  for (const [number, attempt] of call.attempts) if (final === undefined || number > final.start.attempt) final = attempt
  const { start, end } = final as { start: ToolStartLine; end?: ToolEndLine }
  const ordinal = start.ordinal as string
  const skip = (reason: SkippedCallReason, detail: string): { skipped: SkippedCall } => ({
    skipped: { ordinal, logicalCallId: call.toolCallId, callId: call.toolCallId, reason, detail },
  })
  if (end === undefined) return skip('unfinished', `tool "${start.tool}" attempt ${start.attempt} has no tool_end line`)
  let key: string | undefined
  for (const attempt of call.attempts.values()) key ??= attempt.start.requestKey
  if (key === undefined || key === '') return skip('no-request-key', 'the tool call was journaled without a requestKey')
  if (end.status === 'completed' && end.result === undefined) {
    return skip('no-result', `tool "${start.tool}" completed but its tool_end holds no result, so it runs again`)
  }
  const args = start.args
  return {
    entry: {
      kind: 'tool',
      ordinal,
      key,
      record: {
        callId: call.toolCallId,
        tool: start.tool,
        status: end.status === 'completed' ? 'completed' : 'failed',
        attempt: end.attempt,
        maxAttempts: end.maxAttempts,
        ...(end.result === undefined ? {} : { result: end.result }),
        ...(end.failure === undefined ? {} : { failure: end.failure }),
        ...(end.status === 'timed-out' ? { timedOut: true } : {}),
      },
      ...(args === undefined ? {} : { request: { tool: start.tool, args } }),
    },
  }
}

interface ChildCallSeen {
  readonly childCallId: string
  readonly attempts: Map<number, { start: ChildStartLine; end?: ChildEndLine }>
}

/** The child workflow spawns of the script, in journal order. */
function groupChildCalls(journal: JournalReadResult): ChildCallSeen[] {
  const calls = new Map<string, ChildCallSeen>()
  for (const line of journal.lines) {
    if (line.type === 'child_start') {
      let call = calls.get(line.childCallId)
      if (call === undefined) {
        call = { childCallId: line.childCallId, attempts: new Map() }
        calls.set(line.childCallId, call)
      }
      if (!call.attempts.has(line.attempt)) call.attempts.set(line.attempt, { start: line })
    } else if (line.type === 'child_end') {
      const attempt = calls.get(line.childCallId)?.attempts.get(line.attempt)
      if (attempt !== undefined) attempt.end = line
    }
  }
  return [...calls.values()]
}

function childEntry(call: ChildCallSeen): { entry: RecordingEntry } | { skipped: SkippedCall } {
  let final: { start: ChildStartLine; end?: ChildEndLine } | undefined
  for (const [number, attempt] of call.attempts) if (final === undefined || number > final.start.attempt) final = attempt
  const { start, end } = final as { start: ChildStartLine; end?: ChildEndLine }
  const skip = (reason: SkippedCallReason, detail: string): { skipped: SkippedCall } => ({
    skipped: { ordinal: start.ordinal, logicalCallId: call.childCallId, callId: start.childExecutionId, reason, detail },
  })
  // A child still running when the parent stopped is spawned again, as a new attempt.
  if (end === undefined) return skip('unfinished', `child workflow "${start.workflow}" attempt ${start.attempt} has no child_end line`)
  let key: string | undefined
  for (const attempt of call.attempts.values()) key ??= attempt.start.requestKey
  if (key === undefined || key === '') return skip('no-request-key', 'the spawn was journaled without a requestKey')
  if (end.status === 'completed' && end.result === undefined) {
    return skip('no-result', `child workflow "${start.workflow}" completed but its child_end holds no result, so it runs again`)
  }
  return {
    entry: {
      kind: 'child',
      ordinal: start.ordinal,
      key,
      record: {
        callId: call.childCallId,
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
    },
  }
}

/**
 * Reads the recording of one execution from disk: `<dir>/journal.jsonl` with
 * the journal's reader, and for each logical call (grouped by
 * `logicalCallId`) the ordinal and request key of its `agent_start` lines and
 * the result envelope of its FINAL attempt from
 * `<dir>/calls/<callId>/result/result.json`; and for each `tool()` call the
 * script made (by `toolCallId`, with its ordinal, key, arguments and the
 * final attempt's result or failure from `tool_end`), and likewise each
 * child workflow spawn from its `child_start`/`child_end` lines. All attempts of a call share one
 * ordinal, so a discarded attempt is never recorded on its own.
 *
 * `dir` is any execution directory holding a `journal.jsonl`: a root run
 * directory (`.locus-pi/runs/<runId>`) or a nested one
 * (`.locus-pi/runs/<runId>/executions/<executionId>`). A torn last line is
 * ignored, invalid lines are counted, and calls that never finished or lack a
 * readable envelope are listed in `skipped` instead of recorded; nothing of
 * that throws.
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
 * const recording = loadRecording('.locus-pi/runs/20260922-161200-k3x9qz')
 * const session = createReplaySession(recording)
 * ```
 */
export function loadRecording(dir: string): LoadedRecording {
  const executionDir = resolve(dir)
  const journalPath = join(executionDir, RUN_LAYOUT.journal)
  let journal: JournalReadResult
  try {
    journal = readJournal(journalPath)
  } catch (error) {
    throw new RecordingUnreadableError(dir, journalPath, error)
  }
  return buildRecording(journal, executionDir, journalPath, (callId) => readEnvelope(executionDir, callId))
}

/**
 * Builds the recording of one execution from its journal lines, as a
 * `RunStore` returns them (`store.readLines(execution)`), for a run that is
 * not in a runs directory. It reads no file: a completed call's answer comes
 * from its `agent_end` line (which every current journal carries), and a call
 * whose line lacks it is listed in `skipped` as `missing-envelope`, so it
 * runs live again. `location` names the execution in those reports.
 *
 * @throws {DuplicateOrdinalError} when two logical calls share an ordinal.
 * @example
 * ```ts
 * const lines = []
 * for await (const line of store.readLines({ runId, executionId: runId })) lines.push(line)
 * const recording = recordingFromLines(lines, `memory:${runId}`)
 * ```
 */
export function recordingFromLines(lines: readonly JournalLine[], location = 'journal lines'): LoadedRecording {
  const journal: JournalReadResult = { lines: [...lines], tornTail: null, invalid: [], outOfOrder: [] }
  return buildRecording(journal, location, location, (callId) => ({
    reason: 'missing-envelope',
    detail: `the agent_end line of ${callId} holds no answer, and the envelopes of a run in a store are not read`,
  }))
}

function buildRecording(
  journal: JournalReadResult,
  executionDir: string,
  journalPath: string,
  envelopeOf: (callId: string) => ReturnType<typeof readEnvelope>,
): LoadedRecording {
  const entries: RecordingEntry[] = []
  const skipped: SkippedCall[] = []
  for (const call of groupLogicalCalls(journal)) {
    const final = finalAttempt(call)
    const { callId, ordinal } = final.start
    const skip = (reason: SkippedCallReason, detail: string): void => {
      skipped.push({ ordinal, logicalCallId: call.logicalCallId, callId, reason, detail })
    }
    if (!final.terminal) {
      skip('unfinished', `attempt ${final.start.attempt} of ${final.start.attempts} has no agent_end or error line`)
      continue
    }
    const fromJournal = final.end === undefined ? undefined : envelopeFromJournal(executionDir, final.start, final.end)
    const read = fromJournal === undefined ? envelopeOf(callId) : { envelope: fromJournal }
    if ('reason' in read) {
      skip(read.reason, read.detail)
      continue
    }
    let key = final.start.requestKey ?? read.envelope.requestKey
    if (key === undefined) {
      for (const attempt of call.attempts.values()) key ??= attempt.start.requestKey
    }
    if (key === undefined || key.length === 0) {
      skip('no-request-key', 'the call was journaled without a requestKey, so replay cannot tell whether it is the same request')
      continue
    }
    entries.push({
      ordinal,
      key,
      envelope: read.envelope,
      request: journaledRequest(final.start),
      requestFields: JOURNALED_REQUEST_FIELDS,
    })
  }
  for (const call of groupToolCalls(journal)) {
    const found = toolEntry(call)
    if ('entry' in found) entries.push(found.entry)
    else skipped.push(found.skipped)
  }
  for (const call of groupChildCalls(journal)) {
    const found = childEntry(call)
    if ('entry' in found) entries.push(found.entry)
    else skipped.push(found.skipped)
  }
  const recording = createRecording(entries)
  return {
    get: (ordinal) => recording.get(ordinal),
    has: (ordinal) => recording.has(ordinal),
    size: recording.size,
    entries: () => recording.entries(),
    executionDir,
    journalPath,
    tornTail: journal.tornTail !== null,
    invalidLines: journal.invalid.length,
    skipped,
  }
}
