import type { AnswerOutcome, JsonValue, RunDisposition } from '@locus/outcome'
import type {
  AgentEndLine,
  AgentStartLine,
  BudgetChangeLine,
  ChildEndLine,
  ChildStartLine,
  DeferredExpiredLine,
  DeferredOpenLine,
  DeferredSettledLine,
  ErrorLine,
  GroupEndLine,
  GroupStartLine,
  JournalLine,
  LogLine,
  ReplayDivergedLine,
  RetryLine,
  RetryRefused,
  RunEndLine,
  RunStartLine,
  TimerStartLine,
  SignalReceivedLine,
  SignalWaitEndLine,
  SignalWaitStartLine,
  UpdateCompletedLine,
  UpdateFailedLine,
  UpdateReceivedLine,
  ToolEndLine,
  ToolStartLine,
} from './journal-line-schema.js'
import type { OnTimeoutPolicyJson, RunGap } from './journal-line-schema.js'
import { addUsd, subtractUsd } from './usd-sum.js'

const ZERO_USD = '0.000000'

/** How one physical attempt stands. `threw` is an attempt whose terminal record is an `error` line. */
export type AttemptStatus = 'running' | 'completed' | 'failed' | 'threw' | 'timed-out'

/** One physical attempt of an agent call, as the journal shows it. */
export interface AgentAttemptView {
  readonly callId: string
  /**
   * The execution that ran it last. An attempt its execution never finished
   * (killed, suspended) and a resume ran again is one attempt; one that had
   * finished and ran again is a new one.
   */
  executionId: string
  readonly attempt: number
  readonly attempts: number
  status: AttemptStatus
  /** The `seq` of its first line. */
  readonly firstSeq: number
  start: AgentStartLine | undefined
  end: AgentEndLine | undefined
  error: ErrorLine | undefined
}

/** One logical `agent()` call: every physical attempt, grouped by `logicalCallId` alone. */
export interface AgentCallView {
  readonly kind: 'agent'
  readonly id: string
  readonly name: string
  readonly ordinal: string | undefined
  readonly label: string | undefined
  readonly phase: string | undefined
  readonly groupId: string | undefined
  readonly firstSeq: number
  /** Attempts in the order they started. */
  readonly attempts: AgentAttemptView[]
  /** The `[workflow:retry]` boundaries of this call. */
  readonly retries: RetryLine[]
}

/** One attempt of a tool call. */
export interface ToolAttemptView {
  readonly attempt: number
  /** The execution that ran it last (see {@link AgentAttemptView.executionId}). */
  executionId: string
  status: AttemptStatus
  readonly firstSeq: number
  start: ToolStartLine | undefined
  end: ToolEndLine | undefined
}

/** One logical tool call, by `toolCallId`: a script's own (with an ordinal) or a child's (with `parentCallId`). */
export interface ToolCallView {
  readonly kind: 'tool'
  readonly id: string
  readonly name: string
  readonly ordinal: string | undefined
  readonly parentCallId: string | undefined
  readonly label: string | undefined
  readonly groupId: string | undefined
  readonly maxAttempts: number
  readonly firstSeq: number
  readonly attempts: ToolAttemptView[]
  readonly retries: RetryLine[]
}

/** One attempt of a spawned child workflow: a child run in its own execution. */
export interface ChildAttemptView {
  readonly attempt: number
  /** The execution of the parent that spawned it last (see {@link AgentAttemptView.executionId}). */
  executionId: string
  readonly childExecutionId: string
  status: AttemptStatus
  readonly firstSeq: number
  start: ChildStartLine | undefined
  end: ChildEndLine | undefined
}

/** One logical `spawn()` of a child workflow, by `childCallId`, with every attempt. */
export interface ChildCallView {
  readonly kind: 'child'
  readonly id: string
  readonly workflow: string
  readonly ordinal: string
  readonly label: string | undefined
  readonly groupId: string | undefined
  readonly maxAttempts: number
  readonly firstSeq: number
  readonly attempts: ChildAttemptView[]
  readonly retries: RetryLine[]
  /**
   * What the spawn's child runs cost, every attempt added up from
   * `child_end.cost` (a retried attempt's whole cost is retry overhead);
   * `undefined` when no attempt carried a cost.
   */
  cost: ChildCallCost | undefined
}

/** What one logical spawn cost, as {@link ChildCallView.cost} sums it. */
export interface ChildCallCost {
  /** Every attempt's child run, in dollars, its own children included. */
  usd: string
  /** Of `usd`, the children's own retry overhead and the whole of every attempt that was retried. */
  retryOverheadUsd: string
  unpricedRequests: number
}

/** A logical call of either kind. */
export type CallView = AgentCallView | ToolCallView

/** How a logical call ended: its final attempt's status, `unfinished` when that attempt has no terminal record. */
export type CallOutcome = 'completed' | 'failed' | 'threw' | 'timed-out' | 'unfinished'

/** A `parallel()` or `pipeline()` group. */
export interface GroupView {
  readonly groupId: string
  start: GroupStartLine | undefined
  end: GroupEndLine | undefined
}

/** The counts every surface shows, with one definition each. */
export interface RunCounts {
  /** Logical agent calls (distinct `logicalCallId`s). */
  agentCalls: number
  /** Physical agent attempts (distinct `callId`s). */
  agentAttempts: number
  /** Attempts beyond the first, summed over agent calls: each one a re-send that really ran. */
  agentRetries: number
  /** Agent calls whose attempts numbered more than one. */
  retriedAgentCalls: number
  /** Agent calls answered from a recording, each time one was: a resume serving a call from an earlier execution's journal counts here, never as an attempt. */
  replayedAgentCalls: number
  /** Logical tool calls (distinct `toolCallId`s), the script's and children's. */
  toolCalls: number
  toolAttempts: number
  toolRetries: number
  retriedToolCalls: number
  replayedToolCalls: number
  /** Final outcomes of agent calls. */
  agentCompleted: number
  agentFailed: number
  agentThrew: number
  /** LLM requests the host made inside agent attempts (`llm_attempt` lines), and those that were the host's own retries. */
  llmAttempts: number
  llmRetries: number
  /**
   * Retries a call's own rule allowed but the run refused (its retry budget,
   * invocation cap, deadline or a cancellation): terminal records carrying
   * `retryRefused`. A refused retry never ran, so it is not in the retry counts.
   */
  retriesRefused: number
  /** Logical child workflow spawns (distinct `childCallId`s), their attempts, and attempts beyond the first. */
  childCalls: number
  childAttempts: number
  childRetries: number
  /** Spawns answered from a recording. */
  replayedChildCalls: number
  /** Final outcomes of spawns: the last attempt's child completed, or it did not (failed, cancelled, partial, timed out). */
  childCompleted: number
  childFailed: number
  /** `choice` answers the call had to repair: the child's first answer was none of the choices (`agent_end.repaired`). */
  choiceRepairs: number
  /** Groups started, and those that ended other than `completed` (or never ended). */
  groups: number
  groupsNotCompleted: number
}

/** The money a run spent on LLM requests, as {@link RunView.cost} sums it. */
export interface RunCost {
  /** Every priced request, in dollars, as an exact decimal string. */
  usd: string
  /** Of `usd`, what went to attempts that were thrown away: failed requests, agent attempts followed by a retry, and child runs' own overhead and spawn attempts that were retried. */
  retryOverheadUsd: string
  /** Requests whose model had no price: their cost is not in `usd` (unpriced, never zero). */
  unpricedRequests: number
  /** The price table's version, as the lines name it (the last one seen). */
  table: string
}

/** Options of {@link createRunView}. */
export interface RunViewOptions {
  /**
   * `notable` (the default) keeps the calls a report lists (retried, failed,
   * threw, still running) and only counts the others once they completed with
   * one attempt, so memory does not grow with the length of a run. `all`
   * keeps every call, for a live tree or an inspector.
   * @default 'notable'
   */
  readonly keep?: 'notable' | 'all' | undefined
}

/** One execution a view folded, with its own timing. */
export interface ExecutionFoldView {
  readonly executionId: string
  /** Its `run_start`, when readable. */
  readonly runStart: RunStartLine | undefined
  /** Its `run_end`; `undefined` when it stopped without one (killed, taken over, suspended) or still runs. */
  readonly runEnd: RunEndLine | undefined
  readonly ended: boolean
  /** True when it was suspended (its `log` line with `data.suspended`): it stopped without `run_end`, and a resume continues the run. */
  readonly suspended: boolean
  /** True when it began by taking the run over from a worker whose lease expired (`worker_takeover`). */
  readonly tookOver: boolean
  /** True when it learned that its lease moved to another worker (`lease_lost`, `expired` or `taken`). */
  readonly leaseLost: boolean
  /** Who asked it to stop, why and when (`run_cancel_requested`); `undefined` when nobody did, or the journal predates the line. */
  readonly cancelRequested: { readonly reason: string; readonly by: string; readonly at: string } | undefined
  /** When its first line was written. */
  readonly startedAt: string
  /** Its `run_end`'s duration, or, without one, the time its lines span. */
  readonly durationMs: number
  /** The highest `seq` of it applied. */
  readonly lastSeq: number
}

/**
 * One incremental fold of a run's journal lines: `apply` each line in `seq`
 * order and read the run as it stands. The outputs README, `locus show` and
 * `ls`, the live progress tree, the server's status and the inspector all
 * read a run through it, so they agree on every count.
 *
 * Give it the lines of one execution for that execution's own figures, or the
 * lines of a run's root and then each resume in order for the run's: counts
 * then add up every execution (a call a resume served from an earlier
 * execution's journal is counted once, where it ran), the start is the
 * root's, the duration the sum of the executions', and the end the latest
 * execution's. Replays are never mixed in: fold each apart.
 */
export interface RunView {
  /** Folds one line; lines at or before the `seq` already applied of their execution are ignored, so a replayed history and a live tail can overlap. */
  apply(line: JournalLine): void
  /** The highest `seq` applied of the latest execution, -1 before any. */
  readonly lastSeq: number
  /** The first execution's `run_start`: how the run began. */
  readonly runStart: RunStartLine | undefined
  /** The latest execution's `run_end`; `undefined` while it has none, even when an earlier execution ended. */
  readonly runEnd: RunEndLine | undefined
  readonly runId: string | undefined
  /** The latest execution's id. */
  readonly executionId: string | undefined
  readonly workflow: string | undefined
  /** Every execution folded, in the order their first lines came. */
  executions(): ExecutionFoldView[]
  /**
   * The run's duration once its latest execution ended: the sum over its
   * executions of each one's `run_end` duration, or of the time its lines
   * span when it stopped without one. `undefined` while the latest runs.
   */
  readonly durationMs: number | undefined
  /** The disposition once `run_end` is applied; `undefined` before. */
  readonly disposition: RunDisposition | undefined
  /** The recorded result once ended. */
  readonly result: JsonValue | undefined
  /** The answer outcome judged when the run ended (absent from journals written before it was recorded). */
  readonly answerOutcome: AnswerOutcome | undefined
  /** The gaps and caveats of the run's Answer, as recorded on `run_end`; empty before the end. */
  readonly gaps: readonly RunGap[]
  readonly caveats: readonly string[]
  readonly counts: Readonly<RunCounts>
  /**
   * What the run's LLM requests cost, summed exactly from the `cost` of its
   * `llm_attempt` lines (and of `agent_end` lines whose host reported no
   * requests), retries, children and every execution included; a replayed
   * answer cost nothing now. `undefined` when no line carried a cost (the run
   * was not priced).
   */
  readonly cost: Readonly<RunCost> | undefined
  /** Calls kept (all of them under `keep: 'all'`), in the order they started. */
  calls(): CallView[]
  /** Calls with more than one attempt, both kinds, in the order they started. */
  retriedCalls(): CallView[]
  /** Calls whose final attempt did not complete (failed, threw, timed out or still running), with one attempt only. */
  failedCalls(): CallView[]
  /** One call by `logicalCallId` or `toolCallId`, when kept. */
  call(id: string): CallView | undefined
  groups(): GroupView[]
  /** Every spawned child workflow, in the order spawned; always kept, whatever `keep` says. */
  children(): ChildCallView[]
  readonly budgetChanges: readonly BudgetChangeLine[]
  /** The terminal records (`agent_end`, `error`, `tool_end`) whose retry the run refused, in journal order. */
  readonly refusedRetries: readonly RefusedRetryLine[]
  /** The `agent_end` lines of choice answers the call repaired (a clarification turn or the fallback), in journal order; always kept. */
  readonly repairedChoices: readonly RepairedChoiceLine[]
  readonly divergences: readonly ReplayDivergedLine[]
  /** `error` lines that belong to no agent attempt. */
  readonly looseErrors: readonly ErrorLine[]
  /** The final outcome of a call. */
  outcomeOf(call: CallView): CallOutcome
  /** `sleep()` timers started and not fired (in any execution), earliest due first. A cancelled or ended run still lists the timers it never fired. */
  openTimers(): OpenTimerView[]
  /**
   * While the run has not ended and a timer of it is open: the earliest
   * `dueAt` (ISO 8601), the time the run sleeps until. `undefined` otherwise.
   */
  readonly sleepingUntil: string | undefined
  /** The signals the run received, in the order of its mailbox (`signalSeq`), once each whatever the executions. */
  signals(): SignalReceivedLine[]
  /** The `waitForSignal()` waits started and not ended, in the order they started. */
  openSignalWaits(): OpenSignalWaitView[]
  /** The signal each ended wait took, by wait id (`timedOut` for one that timed out). */
  signalWaitEnds(): ReadonlyMap<string, SignalWaitEndLine>
  /** The updates the run accepted, in the order of its update mailbox (`updateSeq`), once each whatever the executions. */
  updates(): UpdateReceivedLine[]
  /** How each update ended (`update_completed` or `update_failed`), by update id; an update received and not here is still to run. */
  updateEnds(): ReadonlyMap<string, UpdateCompletedLine | UpdateFailedLine>
  /**
   * Deferrals opened and not settled, in the order they opened, across the
   * executions folded (a resume waits on the ones an earlier execution opened).
   * A run that ended still lists the ones it never settled.
   */
  openDeferrals(): OpenDeferralView[]
  /** How each settled deferral ended (`deferred_settled`: who answered, through what), by deferral id. */
  deferralSettlements(): ReadonlyMap<string, DeferredSettledLine>
  /**
   * Every deferral opened across the executions folded, by id, in the order
   * they first opened: its first `deferred_open` (whose deadline a resume
   * waits out), the latest `deferred_expired` once its deadline passed, and
   * its `deferred_settled` once it settled. The one deferral fold that
   * resume, the deploy check and the inspector read.
   */
  deferrals(): ReadonlyMap<string, DeferralView>
  /** How long the run waited to start and for what (its `queued` line); `undefined` when it started at once. */
  readonly queued: QueuedView | undefined
  /** The LLM requests that waited for a rate limit (`rate_wait`): how many, and for how long in all. */
  readonly rateWaits: RateWaitsView
}

/** One deferral as the journal tells it: how it opened, whether its deadline passed, how it settled. */
export interface DeferralView {
  /** Its first `deferred_open`: a resume waiting on it again writes none, and a repeated one changes nothing. */
  readonly open: DeferredOpenLine
  /** The latest `deferred_expired`: its deadline passed and its `onTimeout` was applied. */
  readonly expired: DeferredExpiredLine | undefined
  /** Its `deferred_settled`, once settled (resolved, rejected, expired, escalated, cancelled). */
  readonly settled: DeferredSettledLine | undefined
}

/** A deferral opened and not settled, as its `deferred_open` line shows it. */
export interface OpenDeferralView {
  readonly deferredId: string
  readonly tool: string
  readonly args?: JsonValue
  /** Its deadline, ISO 8601, or null to wait as long as it takes. */
  readonly expiresAt: string | null
  /** What the deadline does (the tool's `onTimeout`); absent when it fails the attempt as a timeout. */
  readonly onTimeout?: OnTimeoutPolicyJson
  /** The party an escalation is for. */
  readonly to?: string
  /** The deferral whose deadline opened this one (an escalation). */
  readonly escalatedFrom?: string
  /** The execution that opened it. */
  readonly executionId: string
  /** When it opened (the line's time), ISO 8601. */
  readonly openedAt: string
}

/** A `waitForSignal()` started and not yet ended, as the journal shows it. */
export interface OpenSignalWaitView {
  readonly waitId: string
  readonly name: string
  /** When it times out, ISO 8601; absent without a timeout. */
  readonly dueAt?: string
}

/** A run's wait before its start, from its `queued` line. */
export interface QueuedView {
  readonly keys: readonly string[]
  readonly reason: 'concurrency' | 'rate' | 'priority'
  readonly waitedMs: number
}

/** The rate-limit waits of a run's LLM requests. */
export interface RateWaitsView {
  readonly count: number
  readonly waitedMs: number
}

/** A `sleep()` timer started and not yet fired, as the journal shows it. */
export interface OpenTimerView {
  readonly timerId: string
  readonly logicalCallId: string
  readonly ordinal: string
  /** When it fires, ISO 8601. */
  readonly dueAt: string
}

/** An `agent_end` that carries `repaired`. */
export type RepairedChoiceLine = AgentEndLine & { readonly repaired: NonNullable<AgentEndLine['repaired']> }

/** A terminal record that carries `retryRefused`. */
export type RefusedRetryLine = (AgentEndLine | ErrorLine | ToolEndLine | ChildEndLine) & { readonly retryRefused: RetryRefused }

interface ExecutionState {
  readonly executionId: string
  readonly index: number
  runStart: RunStartLine | undefined
  runEnd: RunEndLine | undefined
  suspended: boolean
  tookOver: boolean
  leaseLost: boolean
  cancelRequested: { readonly reason: string; readonly by: string; readonly at: string } | undefined
  readonly firstTs: string
  lastTs: string
  lastSeq: number
}

/**
 * True when a line of `executionId` belongs to `attempt`: the same execution,
 * or a later one running again an attempt that never finished (it then
 * belongs to the later execution). A finished attempt run again is a new one.
 */
function adopt(attempt: { executionId: string; status: AttemptStatus }, executionId: string): boolean {
  if (attempt.executionId === executionId) return true
  if (attempt.status !== 'running') return false
  attempt.executionId = executionId
  return true
}

/** The `info` line a suspended execution writes last (`handle.suspend()`): `data.suspended` is true. */
function isSuspension(line: LogLine): boolean {
  const data = line.data
  return typeof data === 'object' && data !== null && !Array.isArray(data) && data.suspended === true
}

function durationOf(execution: ExecutionState): number {
  if (execution.runEnd !== undefined) return execution.runEnd.durationMs
  const span = Date.parse(execution.lastTs) - Date.parse(execution.firstTs)
  return Number.isFinite(span) && span > 0 ? span : 0
}

/** The physical attempt a start or terminal line records, the same in every execution: `undefined` for other lines. */
function attemptKey(line: JournalLine): string | undefined {
  switch (line.type) {
    case 'agent_start':
    case 'agent_end':
      return `agent ${line.callId}`
    case 'error':
      return line.callId === undefined || line.logicalCallId === undefined ? undefined : `agent ${line.callId}`
    case 'tool_start':
    case 'tool_end':
      return `tool ${line.toolCallId} ${line.attempt}`
    case 'child_start':
    case 'child_end':
      return `child ${line.childCallId} ${line.attempt}`
    default:
      return undefined
  }
}

function isStart(line: JournalLine): boolean {
  return line.type === 'agent_start' || line.type === 'tool_start' || line.type === 'child_start'
}

/** A terminal line served from a recording (an attempt that threw with no channel is replayed as its `error` line again). */
function isReplayedEnd(line: JournalLine): boolean {
  if (line.type === 'agent_end' || line.type === 'tool_end' || line.type === 'child_end') return line.replayed === true
  return line.type === 'error' && line.failureCause === 'sdk-unavailable'
}

/** The final outcome of a logical call. */
export function callOutcome(call: CallView): CallOutcome {
  const last = call.attempts.at(-1)
  if (last === undefined || last.status === 'running') return 'unfinished'
  return last.status
}

function isNotable(call: CallView): boolean {
  return call.attempts.length > 1 || callOutcome(call) !== 'completed'
}

function toolStatus(line: ToolEndLine): AttemptStatus {
  return line.status
}

/**
 * Starts an empty view of one execution.
 *
 * @example
 * ```ts
 * const view = createRunView()
 * for (const line of readJournal(path).lines) view.apply(line)
 * console.log(view.disposition, view.counts.agentRetries)
 * ```
 */
export function createRunView(options: RunViewOptions = {}): RunView {
  const keepAll = options.keep === 'all'
  const counts: RunCounts = {
    agentCalls: 0,
    agentAttempts: 0,
    agentRetries: 0,
    retriedAgentCalls: 0,
    replayedAgentCalls: 0,
    toolCalls: 0,
    toolAttempts: 0,
    toolRetries: 0,
    retriedToolCalls: 0,
    replayedToolCalls: 0,
    agentCompleted: 0,
    agentFailed: 0,
    agentThrew: 0,
    llmAttempts: 0,
    llmRetries: 0,
    retriesRefused: 0,
    childCalls: 0,
    childAttempts: 0,
    childRetries: 0,
    replayedChildCalls: 0,
    childCompleted: 0,
    childFailed: 0,
    choiceRepairs: 0,
    groups: 0,
    groupsNotCompleted: 0,
  }
  let runStart: RunStartLine | undefined
  let cost: RunCost | undefined
  /** Per agent attempt priced: what of it was not already counted as overhead, and whether its LLM requests carried the cost. */
  const attemptCosts = new Map<string, { kept: string; fromRequests: boolean }>()
  /** Per logical spawn: what its last ended attempt's child kept (its cost less its own retry overhead), overhead once the spawn retries. */
  const childKept = new Map<string, string>()
  const costOf = (table: string): RunCost => (cost ??= { usd: ZERO_USD, retryOverheadUsd: ZERO_USD, unpricedRequests: 0, table })
  // Every execution folded, in the order their first lines came; the last is the run as it stands.
  const executions: ExecutionState[] = []
  const executionById = new Map<string, ExecutionState>()
  // Attempts that reached a terminal record, in any execution: a later execution's start of one of them is a replay until proved live.
  const ended = new Set<string>()
  // Start lines of a later execution held back until the next line says whether they were served from the journal.
  const held = new Map<string, JournalLine>()
  // Calls in the order they started; a call that is dropped (completed with
  // one attempt, under `notable`) leaves this map but stays counted.
  const calls = new Map<string, CallView>()
  const agentOfCallId = new Map<string, AgentCallView>()
  const attemptOfCallId = new Map<string, AgentAttemptView>()
  const groups = new Map<string, GroupView>()
  const children = new Map<string, ChildCallView>()
  // The final outcome each child call was last counted with.
  const childCounted = new Map<string, 'completed' | 'failed'>()
  const budgetChanges: BudgetChangeLine[] = []
  const refusedRetries: RefusedRetryLine[] = []
  const repairedChoices: RepairedChoiceLine[] = []
  const divergences: ReplayDivergedLine[] = []
  // Timers started and not fired; a fired one leaves, so a long run of sleeps costs nothing here.
  const openTimers = new Map<string, TimerStartLine>()
  const signals = new Map<number, SignalReceivedLine>()
  const openSignalWaits = new Map<string, SignalWaitStartLine>()
  const signalWaitEnds = new Map<string, SignalWaitEndLine>()
  const updates = new Map<number, UpdateReceivedLine>()
  const updateEnds = new Map<string, UpdateCompletedLine | UpdateFailedLine>()
  // Deferrals opened and not settled, in open order; a settled one leaves for the settlements.
  const openDeferrals = new Map<string, DeferredOpenLine>()
  const deferralSettlements = new Map<string, DeferredSettledLine>()
  const deferrals = new Map<string, { open: DeferredOpenLine; expired: DeferredExpiredLine | undefined; settled: DeferredSettledLine | undefined }>()
  let queued: QueuedView | undefined
  let rateWaits: RateWaitsView = { count: 0, waitedMs: 0 }
  const looseErrors: ErrorLine[] = []
  // Final outcomes already counted, so a call counted as failed and then retried is re-counted once.
  const counted = new Map<string, CallOutcome>()

  function countFinal(call: AgentCallView): void {
    const outcome = callOutcome(call)
    const before = counted.get(call.id)
    if (before === outcome) return
    if (before === 'completed') counts.agentCompleted -= 1
    else if (before === 'failed' || before === 'timed-out') counts.agentFailed -= 1
    else if (before === 'threw') counts.agentThrew -= 1
    if (outcome === 'completed') counts.agentCompleted += 1
    else if (outcome === 'failed' || outcome === 'timed-out') counts.agentFailed += 1
    else if (outcome === 'threw') counts.agentThrew += 1
    counted.set(call.id, outcome)
  }

  function release(call: CallView): void {
    if (keepAll || isNotable(call)) return
    calls.delete(call.id)
    if (call.kind === 'agent') {
      for (const attempt of call.attempts) {
        agentOfCallId.delete(attempt.callId)
        attemptOfCallId.delete(attempt.callId)
      }
      counted.delete(call.id)
    }
  }

  function agentAttempt(line: AgentStartLine | AgentEndLine): AgentAttemptView {
    const known = attemptOfCallId.get(line.callId)
    if (known !== undefined && adopt(known, line.executionId)) return known
    let call = calls.get(line.logicalCallId)
    if (call?.kind !== 'agent') {
      call = {
        kind: 'agent',
        id: line.logicalCallId,
        name: line.agent,
        ordinal: line.ordinal,
        label: line.label,
        phase: line.phase,
        groupId: line.groupId,
        firstSeq: line.seq,
        attempts: [],
        retries: [],
      }
      calls.set(call.id, call)
      counts.agentCalls += 1
    }
    const attempt: AgentAttemptView = { callId: line.callId, executionId: line.executionId, attempt: line.attempt, attempts: line.attempts, status: 'running', firstSeq: line.seq, start: undefined, end: undefined, error: undefined }
    call.attempts.push(attempt)
    counts.agentAttempts += 1
    if (call.attempts.length > 1) {
      counts.agentRetries += 1
      if (call.attempts.length === 2) counts.retriedAgentCalls += 1
    }
    agentOfCallId.set(line.callId, call)
    attemptOfCallId.set(line.callId, attempt)
    // A new attempt re-opens the call: its earlier failure is no longer its final outcome.
    if (call.attempts.length > 1) countFinal(call)
    return attempt
  }

  function toolAttempt(line: ToolStartLine | ToolEndLine): ToolAttemptView {
    let call = calls.get(line.toolCallId)
    if (call?.kind !== 'tool') {
      call = {
        kind: 'tool',
        id: line.toolCallId,
        name: line.tool,
        ordinal: line.ordinal,
        parentCallId: line.parentCallId,
        label: line.label,
        groupId: line.groupId,
        maxAttempts: line.maxAttempts,
        firstSeq: line.seq,
        attempts: [],
        retries: [],
      }
      calls.set(call.id, call)
      counts.toolCalls += 1
    }
    let attempt = call.attempts.find((candidate) => candidate.attempt === line.attempt && adopt(candidate, line.executionId))
    if (attempt === undefined) {
      attempt = { attempt: line.attempt, executionId: line.executionId, status: 'running', firstSeq: line.seq, start: undefined, end: undefined }
      call.attempts.push(attempt)
      counts.toolAttempts += 1
      if (call.attempts.length > 1) {
        counts.toolRetries += 1
        if (call.attempts.length === 2) counts.retriedToolCalls += 1
      }
    }
    return attempt
  }

  function childAttempt(line: ChildStartLine | ChildEndLine): ChildAttemptView {
    let call = children.get(line.childCallId)
    if (call === undefined) {
      call = {
        kind: 'child',
        id: line.childCallId,
        workflow: line.workflow,
        ordinal: line.ordinal,
        label: line.label,
        groupId: line.groupId,
        maxAttempts: line.maxAttempts,
        firstSeq: line.seq,
        attempts: [],
        retries: [],
        cost: undefined,
      }
      children.set(call.id, call)
      counts.childCalls += 1
    }
    let attempt = call.attempts.find((candidate) => candidate.attempt === line.attempt && adopt(candidate, line.executionId))
    if (attempt === undefined) {
      attempt = { attempt: line.attempt, executionId: line.executionId, childExecutionId: line.childExecutionId, status: 'running', firstSeq: line.seq, start: undefined, end: undefined }
      call.attempts.push(attempt)
      counts.childAttempts += 1
      if (call.attempts.length > 1) counts.childRetries += 1
      // A new attempt re-opens the call: its earlier outcome is no longer final.
      const before = childCounted.get(call.id)
      if (before === 'completed') counts.childCompleted -= 1
      else if (before === 'failed') counts.childFailed -= 1
      childCounted.delete(call.id)
    }
    return attempt
  }

  function countChild(call: ChildCallView, outcome: 'completed' | 'failed'): void {
    const before = childCounted.get(call.id)
    if (before === outcome) return
    if (before === 'completed') counts.childCompleted -= 1
    else if (before === 'failed') counts.childFailed -= 1
    if (outcome === 'completed') counts.childCompleted += 1
    else counts.childFailed += 1
    childCounted.set(call.id, outcome)
  }

  function executionOf(line: JournalLine): ExecutionState {
    let execution = executionById.get(line.executionId)
    if (execution === undefined) {
      execution = { executionId: line.executionId, index: executions.length, runStart: undefined, runEnd: undefined, suspended: false, tookOver: false, leaseLost: false, cancelRequested: undefined, firstTs: line.ts, lastTs: line.ts, lastSeq: -1 }
      executions.push(execution)
      executionById.set(line.executionId, execution)
    }
    return execution
  }

  function apply(line: JournalLine): void {
    const execution = executionOf(line)
    if (line.seq <= execution.lastSeq) return
    execution.lastSeq = line.seq
    if (line.ts > execution.lastTs) execution.lastTs = line.ts
    if (execution.index > 0) {
      // A resume serves a call recorded by an earlier execution as a start and a `replayed` end, written together:
      // that call is counted where it ran, never again.
      const key = attemptKey(line)
      if (key !== undefined && held.has(key) && isReplayedEnd(line)) {
        held.delete(key)
        // Served from the journal, not run: a replay, never an attempt.
        if (line.type === 'agent_end' || line.type === 'error') counts.replayedAgentCalls += 1
        else if (line.type === 'tool_end') counts.replayedToolCalls += 1
        else if (line.type === 'child_end') counts.replayedChildCalls += 1
        return
      }
      for (const start of held.values()) fold(start)
      held.clear()
      if (key !== undefined && isStart(line) && ended.has(key)) {
        held.set(key, line)
        return
      }
    }
    fold(line)
  }

  function fold(line: JournalLine): void {
    const key = attemptKey(line)
    if (key !== undefined && !isStart(line)) ended.add(key)
    if ((line.type === 'agent_end' || line.type === 'error' || line.type === 'tool_end' || line.type === 'child_end') && line.retryRefused !== undefined) {
      refusedRetries.push(line as RefusedRetryLine)
      counts.retriesRefused += 1
    }
    switch (line.type) {
      case 'run_start':
        runStart ??= line
        executionOf(line).runStart ??= line
        return
      case 'run_end':
        executionOf(line).runEnd = line
        return
      case 'agent_start':
        agentAttempt(line).start = line
        return
      case 'agent_end': {
        const attempt = agentAttempt(line)
        attempt.end = line
        // Priced here only when its host reported no requests; a replayed answer cost nothing now.
        if (line.cost !== undefined && line.replayed !== true && attemptCosts.get(line.callId)?.fromRequests !== true) {
          const total = costOf(line.cost.table)
          total.table = line.cost.table
          total.usd = addUsd(total.usd, line.cost.usd)
          total.unpricedRequests += line.cost.unpriced ?? 0
          attemptCosts.set(line.callId, { kept: line.cost.usd, fromRequests: false })
        }
        attempt.status = line.status
        if (line.repaired !== undefined) {
          repairedChoices.push(line as RepairedChoiceLine)
          counts.choiceRepairs += 1
        }
        const call = agentOfCallId.get(line.callId)
        if (call === undefined) return
        if (line.replayed === true) counts.replayedAgentCalls += 1
        countFinal(call)
        release(call)
        return
      }
      case 'error': {
        const attempt = line.callId === undefined ? undefined : attemptOfCallId.get(line.callId)
        const call = line.callId === undefined ? undefined : agentOfCallId.get(line.callId)
        if (attempt === undefined || call === undefined) {
          looseErrors.push(line)
          return
        }
        attempt.error ??= line
        if (attempt.end === undefined) attempt.status = 'threw'
        countFinal(call)
        return
      }
      case 'retry': {
        const discarded = line.kind === 'agent' && line.callId !== undefined ? attemptCosts.get(line.callId) : undefined
        if (discarded !== undefined && cost !== undefined) {
          cost.retryOverheadUsd = addUsd(cost.retryOverheadUsd, discarded.kept)
          discarded.kept = ZERO_USD
        }
        if (line.kind === 'child') {
          const child = line.callId === undefined ? undefined : children.get(line.callId)
          child?.retries.push(line)
          // The attempt thrown away: what its child kept is overhead now, in the spawn's figures and the run's.
          const kept = line.callId === undefined ? undefined : childKept.get(line.callId)
          if (kept !== undefined && cost !== undefined) {
            cost.retryOverheadUsd = addUsd(cost.retryOverheadUsd, kept)
            if (child?.cost !== undefined) child.cost.retryOverheadUsd = addUsd(child.cost.retryOverheadUsd, kept)
            childKept.delete(line.callId ?? '')
          }
          return
        }
        const id = line.kind === 'agent' ? (line.logicalCallId ?? (line.callId === undefined ? undefined : agentOfCallId.get(line.callId)?.id)) : line.callId
        const call = id === undefined ? undefined : calls.get(id)
        call?.retries.push(line)
        return
      }
      case 'tool_start':
        toolAttempt(line).start = line
        return
      case 'tool_end': {
        const attempt = toolAttempt(line)
        attempt.end = line
        attempt.status = toolStatus(line)
        const call = calls.get(line.toolCallId)
        if (call === undefined) return
        if (line.replayed === true) counts.replayedToolCalls += 1
        release(call)
        return
      }
      case 'child_start':
        childAttempt(line).start = line
        return
      case 'child_end': {
        const attempt = childAttempt(line)
        attempt.end = line
        attempt.status = line.status
        const call = children.get(line.childCallId)
        if (call === undefined) return
        if (line.replayed === true) counts.replayedChildCalls += 1
        // The child run's own spend, its children's included; a replayed spawn cost nothing now.
        if (line.cost !== undefined && line.replayed !== true) {
          const total = costOf(line.cost.table)
          total.table = line.cost.table
          total.usd = addUsd(total.usd, line.cost.usd)
          total.retryOverheadUsd = addUsd(total.retryOverheadUsd, line.cost.retryOverheadUsd)
          total.unpricedRequests += line.cost.unpriced ?? 0
          call.cost ??= { usd: ZERO_USD, retryOverheadUsd: ZERO_USD, unpricedRequests: 0 }
          call.cost.usd = addUsd(call.cost.usd, line.cost.usd)
          call.cost.retryOverheadUsd = addUsd(call.cost.retryOverheadUsd, line.cost.retryOverheadUsd)
          call.cost.unpricedRequests += line.cost.unpriced ?? 0
          childKept.set(call.id, subtractUsd(line.cost.usd, line.cost.retryOverheadUsd))
        }
        if (call.attempts.at(-1) === attempt) countChild(call, line.status === 'completed' ? 'completed' : 'failed')
        return
      }
      case 'group_start': {
        const group = groups.get(line.groupId)
        if (group === undefined) {
          groups.set(line.groupId, { groupId: line.groupId, start: line, end: undefined })
          counts.groups += 1
          counts.groupsNotCompleted += 1
        } else group.start ??= line
        return
      }
      case 'group_end': {
        let group = groups.get(line.groupId)
        if (group === undefined) {
          group = { groupId: line.groupId, start: undefined, end: undefined }
          groups.set(line.groupId, group)
          counts.groups += 1
          counts.groupsNotCompleted += 1
        }
        // A resume runs a group again: its latest end is the one that counts.
        const wasCompleted = group.end?.outcome === 'completed'
        if (!wasCompleted && line.outcome === 'completed') counts.groupsNotCompleted -= 1
        else if (wasCompleted && line.outcome !== 'completed') counts.groupsNotCompleted += 1
        group.end = line
        return
      }
      case 'llm_attempt': {
        counts.llmAttempts += 1
        if (line.llmAttempt > 1) counts.llmRetries += 1
        if (line.cost === undefined) return
        const total = costOf(line.cost.table)
        total.table = line.cost.table
        if (!('usd' in line.cost)) {
          total.unpricedRequests += 1
          return
        }
        total.usd = addUsd(total.usd, line.cost.usd)
        const attempt = attemptCosts.get(line.callId) ?? { kept: ZERO_USD, fromRequests: true }
        attempt.fromRequests = true
        // A failed request is thrown away at once; a good one only when its agent attempt is retried.
        if (line.outcome === 'succeeded') attempt.kept = addUsd(attempt.kept, line.cost.usd)
        else total.retryOverheadUsd = addUsd(total.retryOverheadUsd, line.cost.usd)
        attemptCosts.set(line.callId, attempt)
        return
      }
      case 'budget_change':
        budgetChanges.push(line)
        return
      case 'log':
        if (isSuspension(line)) executionOf(line).suspended = true
        return
      case 'worker_takeover':
        executionOf(line).tookOver = true
        return
      case 'lease_lost':
        if (line.reason !== 'released') executionOf(line).leaseLost = true
        return
      case 'run_cancel_requested': {
        // The first request is the one that stopped the execution; a later one changes nothing.
        const execution = executionOf(line)
        execution.cancelRequested ??= { reason: line.reason, by: line.by, at: line.ts }
        return
      }
      case 'replay_diverged':
        divergences.push(line)
        return
      case 'timer_start':
        openTimers.set(line.timerId, line)
        return
      case 'timer_fired':
        openTimers.delete(line.timerId)
        return
      case 'signal_received':
        if (!signals.has(line.signalSeq)) signals.set(line.signalSeq, line)
        return
      case 'signal_wait_start':
        if (!signalWaitEnds.has(line.waitId)) openSignalWaits.set(line.waitId, line)
        return
      case 'signal_wait_end':
        openSignalWaits.delete(line.waitId)
        if (!signalWaitEnds.has(line.waitId)) signalWaitEnds.set(line.waitId, line)
        return
      case 'update_received':
        if (!updates.has(line.updateSeq)) updates.set(line.updateSeq, line)
        return
      case 'update_completed':
      case 'update_failed':
        if (!updateEnds.has(line.updateId)) updateEnds.set(line.updateId, line)
        return
      case 'deferred_open':
        // A resume waits on an open deferral without opening it again; a repeated open changes nothing.
        if (!deferralSettlements.has(line.deferredId) && !openDeferrals.has(line.deferredId)) openDeferrals.set(line.deferredId, line)
        if (!deferrals.has(line.deferredId)) deferrals.set(line.deferredId, { open: line, expired: undefined, settled: undefined })
        return
      case 'deferred_expired': {
        const deferral = deferrals.get(line.deferredId)
        if (deferral !== undefined) deferral.expired = line
        return
      }
      case 'deferred_settled': {
        openDeferrals.delete(line.deferredId)
        if (!deferralSettlements.has(line.deferredId)) deferralSettlements.set(line.deferredId, line)
        const deferral = deferrals.get(line.deferredId)
        if (deferral !== undefined) deferral.settled ??= line
        return
      }
      case 'queued':
        queued ??= { keys: [...line.keys], reason: line.reason, waitedMs: line.waitedMs }
        return
      case 'rate_wait':
        rateWaits = { count: rateWaits.count + 1, waitedMs: rateWaits.waitedMs + line.waitedMs }
        return
      default:
        return
    }
  }

  // A call enters the map at its first line, so the map's order is the order calls started, across executions too.
  const ordered = (): CallView[] => [...calls.values()]

  const latest = (): ExecutionState | undefined => executions.at(-1)
  const runEndOf = (): RunEndLine | undefined => latest()?.runEnd

  return {
    apply,
    get lastSeq() {
      return latest()?.lastSeq ?? -1
    },
    get runStart() {
      return runStart
    },
    get runEnd() {
      return runEndOf()
    },
    get runId() {
      return runStart?.runId ?? runEndOf()?.runId
    },
    get executionId() {
      return latest()?.executionId
    },
    executions: () =>
      executions.map((execution) => ({
        executionId: execution.executionId,
        runStart: execution.runStart,
        runEnd: execution.runEnd,
        ended: execution.runEnd !== undefined,
        suspended: execution.suspended,
        tookOver: execution.tookOver,
        leaseLost: execution.leaseLost,
        cancelRequested: execution.cancelRequested,
        startedAt: execution.runStart?.ts ?? execution.firstTs,
        durationMs: durationOf(execution),
        lastSeq: execution.lastSeq,
      })),
    get durationMs() {
      if (runEndOf() === undefined) return undefined
      return executions.reduce((total, execution) => total + durationOf(execution), 0)
    },
    get workflow() {
      return runStart?.workflow
    },
    get disposition() {
      return runEndOf()?.disposition
    },
    get result() {
      return runEndOf()?.result
    },
    get answerOutcome() {
      return runEndOf()?.answerOutcome
    },
    get gaps() {
      return runEndOf()?.gaps ?? []
    },
    get caveats() {
      return runEndOf()?.caveats ?? []
    },
    counts,
    get cost() {
      return cost
    },
    calls: ordered,
    retriedCalls: () => ordered().filter((call) => call.attempts.length > 1),
    failedCalls: () => ordered().filter((call) => call.attempts.length <= 1 && callOutcome(call) !== 'completed'),
    call: (id) => calls.get(id),
    groups: () => [...groups.values()],
    children: () => [...children.values()],
    budgetChanges,
    refusedRetries,
    repairedChoices,
    divergences,
    looseErrors,
    outcomeOf: callOutcome,
    openTimers: () =>
      [...openTimers.values()]
        .map(({ timerId, logicalCallId, ordinal, dueAt }) => ({ timerId, logicalCallId, ordinal, dueAt }))
        .sort((left, right) => Date.parse(left.dueAt) - Date.parse(right.dueAt)),
    signals: () => [...signals.values()].sort((left, right) => left.signalSeq - right.signalSeq),
    openSignalWaits: () => [...openSignalWaits.values()].map(({ waitId, name, dueAt }) => ({ waitId, name, ...(dueAt === undefined ? {} : { dueAt }) })),
    signalWaitEnds: () => signalWaitEnds,
    updates: () => [...updates.values()].sort((left, right) => left.updateSeq - right.updateSeq),
    updateEnds: () => updateEnds,
    openDeferrals: () => [...openDeferrals.values()].map(openDeferralView),
    deferralSettlements: () => deferralSettlements,
    deferrals: () => deferrals,
    get queued() {
      return queued
    },
    get rateWaits() {
      return rateWaits
    },
    get sleepingUntil() {
      if (runEndOf() !== undefined) return undefined
      let earliest: string | undefined
      for (const timer of openTimers.values()) if (earliest === undefined || Date.parse(timer.dueAt) < Date.parse(earliest)) earliest = timer.dueAt
      return earliest
    },
  }
}

function openDeferralView(line: DeferredOpenLine): OpenDeferralView {
  return {
    deferredId: line.deferredId,
    tool: line.tool,
    ...(line.args === undefined ? {} : { args: line.args }),
    expiresAt: line.expiresAt,
    ...(line.onTimeout === undefined ? {} : { onTimeout: line.onTimeout }),
    ...(line.to === undefined ? {} : { to: line.to }),
    ...(line.escalatedFrom === undefined ? {} : { escalatedFrom: line.escalatedFrom }),
    executionId: line.executionId,
    openedAt: line.ts,
  }
}
