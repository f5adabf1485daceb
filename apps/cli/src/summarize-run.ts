import type { JournalLine } from '@locus/journal'
import type { AnswerOutcome } from '@locus/partial'
import type { JsonValue } from '@locus/outcome'
import { answerOutcomeOf, gapsOf } from '@locus/runtime'
import type { ExecutionRecord, RunRecord } from './run-record.js'

/** How a run stands: its disposition once it ended, `unfinished` while running or after a crash. */
export type RunStanding = 'completed' | 'failed' | 'cancelled' | 'unfinished'

/** One attempt of a retried call. */
export interface RetriedAttempt {
  readonly attempt: number
  /** `callId` of an agent attempt, `toolCallId` of a tool call. */
  readonly callId: string
  /** How the attempt ended: `completed`, the failure cause, `threw`, or `running`. */
  readonly outcome: string
}

/** A logical call that took more than one attempt. */
export interface RetriedCall {
  readonly kind: 'agent' | 'tool'
  /** The agent role or tool name. */
  readonly name: string
  /** `logicalCallId` of an agent call, `toolCallId` of a tool call. */
  readonly id: string
  readonly attempts: readonly RetriedAttempt[]
}

/** One gap of a partial answer, as the summary lists it. */
export interface SummaryGap {
  readonly tool: string
  readonly criticality: string
  readonly reason?: string
}

/** What `locus run`, `show` and `ls` say about one execution of a run. */
export interface RunSummary {
  readonly runId: string
  readonly executionId: string
  readonly workflow: string
  readonly standing: RunStanding
  /** The answer outcome recorded in the metrics (`complete`, `partial`, `cannot_answer`, `failed`); absent while unfinished. */
  readonly answerOutcome?: AnswerOutcome
  readonly startedAt: string | undefined
  readonly durationMs: number | undefined
  /** The workflow file recorded in `run_start.options.source`. */
  readonly source: string | undefined
  readonly host: string | undefined
  /** Logical `agent()` calls, and their physical attempts. */
  readonly agentCalls: number
  readonly agentAttempts: number
  /** Agent calls answered from a recording (resume or replay). */
  readonly replayedCalls: number
  readonly toolCalls: number
  readonly toolAttempts: number
  /** `[workflow:retry]` boundaries: attempts that were discarded and tried again. */
  readonly retries: number
  readonly retriedCalls: readonly RetriedCall[]
  readonly gaps: readonly SummaryGap[]
  readonly caveats: readonly string[]
  readonly result: JsonValue
  readonly error: string | undefined
  readonly outputsReadme: string
  /** The execution's `result.json`, which holds the whole result when a summary cuts it. */
  readonly resultFile: string
  /** Problems the journal reader found: a torn last line, invalid lines, an empty journal. */
  readonly journalProblems: readonly string[]
  /**
   * True when the execution's journal holds no `run_start`: it is empty (its
   * process stopped before the first line reached the disk), so nothing was
   * recorded and there is nothing to resume from.
   */
  readonly nothingRecorded: boolean
}

function record(value: JsonValue | undefined): Readonly<Record<string, JsonValue>> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined
}

function caveatsOf(result: JsonValue): string[] {
  for (const candidate of [record(result), record(record(result)?.answer)]) {
    const caveats = candidate?.caveats
    if (Array.isArray(caveats) && typeof candidate?.partial === 'boolean') return caveats.filter((caveat): caveat is string => typeof caveat === 'string')
  }
  return []
}

function retriedCallsOf(lines: readonly JournalLine[]): RetriedCall[] {
  const agents = new Map<string, { name: string; attempts: Map<string, { attempt: number; outcome: string }> }>()
  const tools = new Map<string, { name: string; attempts: Map<number, string> }>()
  for (const line of lines) {
    if (line.type === 'agent_start') {
      const call = agents.get(line.logicalCallId) ?? { name: line.agent, attempts: new Map() }
      call.attempts.set(line.callId, { attempt: line.attempt, outcome: 'running' })
      agents.set(line.logicalCallId, call)
    } else if (line.type === 'agent_end' || (line.type === 'error' && line.logicalCallId !== undefined && line.callId !== undefined)) {
      const call = line.logicalCallId === undefined ? undefined : agents.get(line.logicalCallId)
      const attempt = line.callId === undefined ? undefined : call?.attempts.get(line.callId)
      if (attempt !== undefined) {
        attempt.outcome = line.type === 'error' ? `threw${line.failureCause === undefined ? '' : ` (${line.failureCause})`}` : line.status === 'completed' ? 'completed' : (line.failureCause ?? 'failed')
      }
    } else if (line.type === 'tool_start') {
      const call = tools.get(line.toolCallId) ?? { name: line.tool, attempts: new Map() }
      call.attempts.set(line.attempt, 'running')
      tools.set(line.toolCallId, call)
    } else if (line.type === 'tool_end') {
      tools.get(line.toolCallId)?.attempts.set(line.attempt, line.status === 'completed' ? 'completed' : `${line.status}${line.failure?.code === undefined ? '' : ` (${line.failure.code})`}`)
    }
  }
  const retried: RetriedCall[] = []
  for (const [id, call] of agents) {
    if (call.attempts.size < 2) continue
    retried.push({ kind: 'agent', name: call.name, id, attempts: [...call.attempts].map(([callId, attempt]) => ({ callId, ...attempt })) })
  }
  for (const [id, call] of tools) {
    if (call.attempts.size < 2) continue
    retried.push({ kind: 'tool', name: call.name, id, attempts: [...call.attempts].map(([attempt, outcome]) => ({ attempt, callId: id, outcome })) })
  }
  return retried
}

/**
 * Summarises one execution of a run from its journal and `result.json`:
 * standing, calls and attempts, retries, gaps and caveats of a partial answer,
 * and the result. Counting rules: an agent call is one `logicalCallId`, each
 * `agent_start` one attempt; a tool call is one `toolCallId`; a retry is one
 * `retry` line.
 */
export function summarizeExecution(execution: ExecutionRecord): RunSummary {
  const lines = execution.journal.lines
  const start = lines.find((line) => line.type === 'run_start')
  const end = lines.find((line) => line.type === 'run_end')
  const options = record(start?.options)
  const standing: RunStanding = end?.disposition ?? execution.result?.disposition ?? 'unfinished'
  const result: JsonValue = end?.result ?? execution.result?.result ?? null
  const logical = new Set<string>()
  const toolCallIds = new Set<string>()
  let agentAttempts = 0
  let replayedCalls = 0
  let toolAttempts = 0
  let retries = 0
  for (const line of lines) {
    if (line.type === 'agent_start') {
      logical.add(line.logicalCallId)
      agentAttempts += 1
    } else if (line.type === 'agent_end' && line.replayed === true) replayedCalls += 1
    else if (line.type === 'tool_start') {
      toolCallIds.add(line.toolCallId)
      toolAttempts += 1
    } else if (line.type === 'retry') retries += 1
  }
  const problems: string[] = []
  if (execution.journal.tornTail !== null) problems.push(`torn last line at byte ${execution.journal.tornTail.byteOffset} (the process stopped mid-write)`)
  for (const invalid of execution.journal.invalid) problems.push(invalid.error)
  const nothingRecorded = start === undefined && end === undefined && execution.result === undefined
  if (nothingRecorded) problems.push('empty: no run_start line, so nothing was recorded')
  const errorMessage = end?.error?.message ?? execution.result?.error?.message
  return {
    runId: start?.runId ?? execution.executionId,
    executionId: execution.executionId,
    workflow: start?.workflow ?? 'unknown',
    standing,
    ...(standing === 'unfinished' ? {} : { answerOutcome: answerOutcomeOf(standing, result) }),
    startedAt: start?.ts,
    durationMs: end?.durationMs,
    source: typeof options?.source === 'string' ? options.source : undefined,
    host: typeof options?.host === 'string' ? options.host : undefined,
    agentCalls: logical.size,
    agentAttempts,
    replayedCalls,
    toolCalls: toolCallIds.size,
    toolAttempts,
    retries,
    retriedCalls: retriedCallsOf(lines),
    gaps: gapsOf(result).map((gap) => ({ tool: gap.tool, criticality: gap.criticality, ...(gap.reason === undefined ? {} : { reason: gap.reason }) })),
    caveats: caveatsOf(result),
    result,
    error: errorMessage,
    outputsReadme: execution.outputsReadmePath,
    resultFile: execution.resultPath,
    journalProblems: problems,
    nothingRecorded,
  }
}

/** Summarises a run as it stands now: its latest execution (the last resume, or the root). */
export function summarizeRun(run: RunRecord): RunSummary {
  return summarizeExecution(run.latest)
}
