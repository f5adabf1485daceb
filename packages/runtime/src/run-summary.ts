import { Usd, formatUsd, zeroUsd } from '@locus/cost'
import type { CallView, RunCost, RunView } from '@locus/journal'
import { type AnswerOutcome, judgeRunAnswer } from '@locus/partial'
import type { JsonValue } from '@locus/outcome'
import type { RunResultFile } from './run-result-schema.js'

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

/** One spawned child workflow, as a summary lists it: its last attempt. */
export interface SummaryChild {
  /** The spawn's `childCallId`. */
  readonly id: string
  readonly workflow: string
  readonly attempts: number
  /** The execution of its last attempt, where the child's own journal and outputs are. */
  readonly childExecutionId: string
  /** The last attempt's child disposition; `unfinished` when it has none (still running, timed out, or its parent stopped). */
  readonly disposition: RunStanding
  readonly replayed: boolean
}

/** A `choice` answer the call repaired: the child's first answer was none of the choices. */
export interface SummaryRepair {
  readonly agent: string
  /** The attempt (`callId`) whose answer was repaired. */
  readonly callId: string
  /** The child's first answer (its first 200 characters). */
  readonly from: string
  /** The choice the call answered with. */
  readonly to: string
  /** `clarification`: the child named a choice when asked again; `fallback`: the call took its `choiceFallback`. */
  readonly via: 'clarification' | 'fallback'
}

/** One gap of a partial answer, as a summary lists it. */
export interface SummaryGap {
  readonly tool: string
  readonly criticality: string
  readonly reason?: string
}

/** What `locus run`, `show` and `ls` (and the server's status) say about one execution of a run. */
export interface RunSummary {
  readonly runId: string
  readonly executionId: string
  readonly workflow: string
  readonly standing: RunStanding
  /** The answer outcome recorded when the run ended (`complete`, `partial`, `cannot_answer`, `failed`); absent while unfinished. */
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
  /** Attempts beyond the first that really ran, agent and tool calls together. */
  readonly retries: number
  /** LLM requests the host made inside agent attempts, and how many of them were its own retries. */
  readonly llmAttempts: number
  readonly llmRetries: number
  /** What the run's LLM requests cost (every execution, retries and children included), when it was priced. */
  readonly cost?: RunCost | undefined
  /** The run's money budget (`budgets.maxCostUsd`) and what is left of it after `cost`, when it had one: decimal strings of dollars. */
  readonly costBudget?: { readonly limitUsd: string; readonly leftUsd: string } | undefined
  /** Who asked the latest execution to stop, why and when (its `run_cancel_requested` line), when someone did. */
  readonly cancelRequested?: { readonly reason: string; readonly by: string; readonly at: string } | undefined
  /** Retries a call's own rule allowed but the run refused (retry budget, invocation cap, deadline, cancellation); never counted in `retries`. */
  readonly retriesRefused: number
  /** Child workflow spawns, and how many of them ended completed or not (failed, cancelled, partial, timed out). */
  readonly childCalls: number
  readonly childCompleted: number
  readonly childFailed: number
  /** Every spawn, in the order spawned. */
  readonly children: readonly SummaryChild[]
  /** Calls with more than one attempt: agent calls first, then tool calls, each in the order they started. */
  readonly retriedCalls: readonly RetriedCall[]
  /** Choice answers the call had to repair, in the order they ended. */
  readonly repairedChoices: readonly SummaryRepair[]
  readonly gaps: readonly SummaryGap[]
  readonly caveats: readonly string[]
  readonly result: JsonValue
  readonly error: string | undefined
  /** Where a person finds the outputs README (a path for the file store). */
  readonly outputsReadme: string
  /** Where a person finds the execution's `result.json` (a path for the file store), which holds the whole result when a summary cuts it. */
  readonly resultPath: string | undefined
  /** Problems the journal reader found: a torn last line, invalid lines, an empty journal. */
  readonly journalProblems: readonly string[]
  /**
   * True when the execution recorded nothing: no `run_start`, no `run_end`
   * and no `result.json` (its process stopped before the first line reached
   * the store), so there is nothing to resume from.
   */
  readonly nothingRecorded: boolean
}

/** What a summary needs besides the fold. */
export interface SummaryExtras {
  /** The execution's `result.json`, when it was written. */
  readonly resultFile?: RunResultFile | undefined
  readonly outputsReadme: string
  /** Where a person finds the execution's `result.json`. */
  readonly resultPath?: string | undefined
  /** The execution's ids, for one whose journal and result name none (it recorded nothing). */
  readonly runId?: string | undefined
  readonly executionId?: string | undefined
  readonly journalProblems?: readonly string[] | undefined
}

function record(value: JsonValue | undefined): Readonly<Record<string, JsonValue>> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined
}

/** True when an execution recorded nothing: no `run_start`, no `run_end`, no `result.json`. */
export function isNothingRecorded(view: RunView, resultFile: RunResultFile | undefined): boolean {
  return view.runStart === undefined && view.runEnd === undefined && resultFile === undefined
}

function retriedCallOf(call: CallView): RetriedCall {
  if (call.kind === 'agent') {
    return {
      kind: 'agent',
      name: call.name,
      id: call.id,
      attempts: call.attempts.map((attempt) => ({
        attempt: attempt.attempt,
        callId: attempt.callId,
        outcome:
          attempt.status === 'threw'
            ? `threw${attempt.error?.failureCause === undefined ? '' : ` (${attempt.error.failureCause})`}`
            : attempt.status === 'failed'
              ? (attempt.end?.failureCause ?? 'failed')
              : attempt.status,
      })),
    }
  }
  return {
    kind: 'tool',
    name: call.name,
    id: call.id,
    attempts: call.attempts.map((attempt) => ({
      attempt: attempt.attempt,
      callId: call.id,
      outcome: attempt.status === 'completed' || attempt.status === 'running' ? attempt.status : `${attempt.status}${attempt.end?.failure?.code === undefined ? '' : ` (${attempt.end.failure.code})`}`,
    })),
  }
}

/** The money budget `run_start` recorded, and what is left of it after what the run spent. */
function cancelRequestOf(view: RunView): { cancelRequested?: { reason: string; by: string; at: string } } {
  const request = view.executions().at(-1)?.cancelRequested
  return request === undefined ? {} : { cancelRequested: { ...request } }
}

function costBudgetOf(options: Readonly<Record<string, JsonValue>> | undefined, cost: RunCost | undefined): { costBudget?: { limitUsd: string; leftUsd: string } } {
  const limit = record(options?.budgets)?.maxCostUsd
  if (typeof limit !== 'string' || !/^\d+(\.\d+)?$/.test(limit)) return {}
  const spent = cost === undefined ? zeroUsd() : new Usd(cost.usd)
  return { costBudget: { limitUsd: formatUsd(new Usd(limit)), leftUsd: formatUsd(Usd.max(zeroUsd(), new Usd(limit).sub(spent))) } }
}

/**
 * Summarises one execution from its {@link RunView}: the same counts as the
 * outputs README (the view's), the answer outcome, gaps and caveats recorded
 * on `run_end` (judged from the result only for journals written before they
 * were recorded), and the result.
 */
export function summarizeRunView(view: RunView, extras: SummaryExtras): RunSummary {
  const end = view.runEnd
  const file = extras.resultFile
  const options = record(view.runStart?.options)
  const standing: RunStanding = end?.disposition ?? file?.disposition ?? 'unfinished'
  const result: JsonValue = end?.result ?? file?.result ?? null
  const judged = standing === 'unfinished' ? undefined : judgeRunAnswer(standing, result)
  const answerOutcome = end?.answerOutcome ?? file?.answerOutcome ?? judged?.answerOutcome
  const gaps = end?.gaps ?? file?.gaps ?? judged?.gaps ?? []
  const caveats = end?.caveats ?? file?.caveats ?? judged?.caveats ?? []
  const counts = view.counts
  const retried = view.retriedCalls()
  return {
    runId: view.runId ?? file?.runId ?? extras.runId ?? 'unknown',
    executionId: view.executionId ?? file?.executionId ?? extras.executionId ?? 'unknown',
    workflow: view.workflow ?? file?.workflow ?? 'unknown',
    standing,
    ...(answerOutcome === undefined ? {} : { answerOutcome }),
    startedAt: view.runStart?.ts ?? file?.startedAt,
    durationMs: view.durationMs,
    source: typeof options?.source === 'string' ? options.source : undefined,
    host: typeof options?.host === 'string' ? options.host : undefined,
    agentCalls: counts.agentCalls,
    agentAttempts: counts.agentAttempts,
    replayedCalls: counts.replayedAgentCalls,
    toolCalls: counts.toolCalls,
    toolAttempts: counts.toolAttempts,
    retries: counts.agentRetries + counts.toolRetries,
    llmAttempts: counts.llmAttempts,
    llmRetries: counts.llmRetries,
    ...(view.cost === undefined ? {} : { cost: { ...view.cost } }),
    ...costBudgetOf(options, view.cost),
    ...cancelRequestOf(view),
    retriesRefused: counts.retriesRefused,
    childCalls: counts.childCalls,
    childCompleted: counts.childCompleted,
    childFailed: counts.childFailed,
    children: view.children().map((child) => {
      const last = child.attempts.at(-1)
      return {
        id: child.id,
        workflow: child.workflow,
        attempts: child.attempts.length,
        childExecutionId: last?.childExecutionId ?? '',
        disposition: last?.end?.disposition ?? 'unfinished',
        replayed: last?.end?.replayed === true,
      }
    }),
    repairedChoices: view.repairedChoices.map((line) => ({ agent: line.agent, callId: line.callId, from: line.repaired.from, to: line.repaired.to, via: line.repaired.via })),
    retriedCalls: [...retried.filter((call) => call.kind === 'agent'), ...retried.filter((call) => call.kind === 'tool')].map(retriedCallOf),
    gaps: gaps.map((gap) => ({ tool: gap.tool, criticality: gap.criticality, ...(gap.reason === undefined ? {} : { reason: gap.reason }) })),
    caveats: [...caveats],
    result,
    error: end?.error?.message ?? file?.error?.message,
    outputsReadme: extras.outputsReadme,
    resultPath: extras.resultPath,
    journalProblems: [...(extras.journalProblems ?? [])],
    nothingRecorded: isNothingRecorded(view, file),
  }
}
