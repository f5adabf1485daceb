import type { CostLedger, PriceTable } from '@locus/cost'
import type { DeferredExpiredLine, JournalLine, JournalLineInput, RetryRefused, RetryRefuser, RunCost, SerializedError } from '@locus/journal'
import type { JsonValue, StepCriticality } from '@locus/outcome'
import { type RunScope, WorkflowCancelledError, WorkflowInvocationCapError, WorkflowRunDeadlineError } from '@locus/groups'
import type { ReplaySession } from '@locus/replay'
import { type JitterMode, type RetryBudget, type RetryClock, createRetryBudget } from '@locus/retry'
import type { TriggerTransport } from '@locus/protocol'
import type { LaunchMode } from './budgets.js'
import type { Deferrals } from './deferrals.js'
import type { SignalInbox } from './signals.js'
import type { UpdateInbox } from './updates.js'
import type { CallActivity } from './call-activity.js'
import type { ExecutionMedium } from './execution-medium.js'
import type { CallBudgets, CountedBudgets, TurnProgress } from './host.js'
import type { WorkflowDefinition } from './define.js'
import type { AgentHost, HostTool } from './host.js'
import type { RateLimiter } from './rate-limits.js'

/** How a spawned child run ended, as its parent sees it. */
export interface RunResultOfChild {
  readonly disposition: 'completed' | 'failed' | 'cancelled'
  readonly result: JsonValue
  readonly error?: SerializedError | undefined
  /** What the child run cost (its `RunView.cost`), when it was priced. */
  readonly cost?: RunCost | undefined
}

/** Why a retry the call's own rule allowed may not run, and the error that ends the call when it is a hard stop. */
export interface RetryRefusal {
  readonly by: RetryRefuser
  /** The hard stop or cancellation to throw; absent for the retry budget, which ends only the call. */
  readonly error?: Error
  /** For a `cost-budget` refusal: the money budget that did not cover the retry. */
  readonly costBudget?: RetryRefused['costBudget']
}

/** A call the run could not afford: the gap it leaves in the answer. */
export interface MoneyRefusal {
  /** The step, as the gap names it: the call's label, else its agent role. */
  readonly step: string
  readonly logicalCallId: string
  readonly criticality: StepCriticality
  /** `not run: the run's cost budget of $2.50 was spent`. */
  readonly reason: string
}

/** Progress of one agent attempt while its model streams: for live views and subscribers, never journaled token by token. */
export interface RunProgress extends TurnProgress {
  readonly callId: string
  readonly logicalCallId: string
  readonly attempt: number
  readonly agent: string
}

/** What a parent asks for when its script spawns a child workflow. Internal. */
export interface ChildSpawnRequest {
  readonly definition: WorkflowDefinition
  /** The child's input, as its schema parsed it. */
  readonly input: unknown
  readonly childCallId: string
  readonly childExecutionId: string
  /** Aborted when the attempt times out or the parent is cancelled: the child run is then cancelled. */
  readonly signal: AbortSignal
}

/** The physical agent attempts a whole run tree has started: a child's count against its root's cap. */
export interface InvocationLedger {
  invocations: number
}

/** A `sleep()` timer an earlier execution of the run journaled. */
export interface RecordedTimer {
  /** When it fires, clock milliseconds. */
  readonly dueAt: number
  /** Set once it fired: when, and how late. */
  readonly fired?: { readonly firedAt: number; readonly lateMs: number }
}

/** A deferral an earlier execution of the run opened: its deadline as first journaled, and what its deadline did once it passed. */
export interface RecordedDeferral {
  /** Its deadline, clock milliseconds, or null for none. */
  readonly expiresAt: number | null
  /** Set once its deadline passed and its `onTimeout` was applied: a resume serves that from here. */
  readonly expired?: DeferredExpiredLine
}

/** A budget that refuses every retry: `retryBudget: 0`. */
const NO_RETRIES: RetryBudget = Object.freeze({ tryWithdraw: () => false, available: () => 0 })

/** The run-wide retry budget of the run options: none, one that refuses every retry (`0`), or one of that many retries. */
export function runRetryBudget(capacity: number | undefined, clock: RetryClock): RetryBudget | undefined {
  return capacity === undefined ? undefined : capacity === 0 ? NO_RETRIES : createRetryBudget({ capacity, refillPerSecond: 0, clock })
}

/** Which execution of which run this is. */
export interface ExecutionIds {
  readonly runId: string
  readonly executionId: string
}

/** The bounds of a run tree: a child's are its root's, measured from the root's start and counted on its ledger. */
export interface RunBounds {
  /** The clock reading the deadline counts from (a root that counts from its enqueue starts earlier than it ran). */
  readonly startedAt: number
  readonly deadlineMs: number | undefined
  readonly maxInvocations: number | undefined
  /** How the run was launched; hosts pick their own defaults (such as a turn budget) from it. */
  readonly launchMode: LaunchMode
  /** The per-call budgets every call starts from: the launch mode's defaults with the run-level overrides applied. */
  readonly callDefaults: CountedBudgets
  /** The run-level per-call budgets as given (turn budgets among them), before launch-mode defaults. */
  readonly perCallOverrides: CallBudgets | undefined
}

/** What a root run and every child it spawns share: one of each per run tree. */
export interface RunTree {
  readonly host: AgentHost | undefined
  /** The physical agent attempts the tree has started, counted against the root's cap. */
  readonly ledger: InvocationLedger
  /** The run-wide retry budget every tool and agent retry draws from; undefined when the run has none. */
  readonly retryBudget: RetryBudget | undefined
  /** How tool retry backoff is spread. */
  readonly jitter: JitterMode
  /** Open deferrals of deferred tools, and where answers given from outside this process land. */
  readonly deferrals: Deferrals
  /** The run's signals: those its journal holds and the mailbox new ones come from. */
  readonly signals: SignalInbox
  /** The run's updates: those its journal holds and the mailbox new ones come from. */
  readonly updates: UpdateInbox
  /** The calls in flight, and how many of them wait on a deferral. */
  readonly activity: CallActivity
  /** Set once the execution is suspended: nothing more is written anywhere in the tree, and no run_end. */
  readonly suspension: { suspended: boolean }
  /** How remote tools reach their worker; undefined when the run has none. */
  readonly worker: TriggerTransport | undefined
  /** The shared rate limits the run's LLM calls wait on; undefined without any. */
  readonly rateLimiter: RateLimiter | undefined
  /** Where streamed progress of agent calls goes; never the journal. */
  readonly onProgress: ((progress: RunProgress) => void) | undefined
  /** Prices LLM requests from their usage; undefined when the run is not priced. */
  readonly prices: PriceTable | undefined
  /** The money budget of the tree (`budgets.maxCostUsd`); undefined without one (and on a replay, which spends nothing). */
  readonly costLedger: CostLedger | undefined
  /** Calls the tree could not afford, in the order they were refused. */
  readonly moneyRefusals: MoneyRefusal[]
  /** Workflows a `spawn()` may name, by name. */
  readonly workflows: ReadonlyMap<string, WorkflowDefinition>
}

/** What earlier executions of this run left for this one (empty for a fresh run). */
export interface ExecutionHistory {
  /** Set on a resumed or replayed execution: recorded calls answer from it while their keys match. */
  readonly replay: ReplaySession | undefined
  /** Deferrals an earlier execution opened that are still waiting: a resume waits on them without opening them again. */
  readonly openedDeferrals: ReadonlySet<string>
  /** Deferrals earlier executions opened, by id, settled or not: their deadlines, and the expiries they journaled. */
  readonly recordedDeferrals: ReadonlyMap<string, RecordedDeferral>
  /** Timers earlier executions journaled, by timer id: a fired one is served from the journal, an unfired one waits for the rest. */
  readonly recordedTimers: ReadonlyMap<string, RecordedTimer>
  /** Spawn attempts earlier executions started, by ordinal, so a resumed spawn numbers its next attempt after them. */
  readonly priorChildAttempts: ReadonlyMap<string, number>
  /** A check-only replay (the deploy check): a sleep the recording did not see fire is refused, never waited out. */
  readonly refusesLiveWaits: boolean
}

/** What the calls of an execution reach through the run: built with the run, around it. */
export interface ExecutionCalls {
  /** The execution's group scope: its concurrency, cancellation and hard-stop latch. */
  readonly scope: RunScope
  /** The workflow's full tool surface as hosts see it; calls go through tool() so they are journaled. */
  readonly hostTools: readonly HostTool[]
  /** Runs a child workflow to its end in a nested execution of this run. */
  readonly spawnChild: (request: ChildSpawnRequest) => Promise<RunResultOfChild>
}

/**
 * Everything an execution is made of, as a few plain objects: its ids, where
 * it writes, the run tree's bounds and shared parts (a child passes its
 * root's), what earlier executions left, and its calls' surface.
 */
export interface RunContext {
  readonly ids: ExecutionIds
  readonly medium: ExecutionMedium
  readonly workflow: WorkflowDefinition
  readonly clock: RetryClock
  /** Aborted when the execution is cancelled. */
  readonly signal: AbortSignal
  readonly bounds: RunBounds
  readonly tree: RunTree
  readonly history: ExecutionHistory
  readonly calls: ExecutionCalls
  /** The run whose script spawned this one; absent for a root or resumed execution. */
  readonly parent?: RunState | undefined
}

/** Everything one executing run shares between its calls: the parts of its {@link RunContext}, by name. Internal. */
export class RunState {
  readonly runId: string
  readonly executionId: string
  readonly medium: ExecutionMedium
  readonly workflow: WorkflowDefinition
  readonly clock: RetryClock
  readonly signal: AbortSignal
  readonly bounds: RunBounds
  readonly tree: RunTree
  readonly history: ExecutionHistory
  /** The run whose script spawned this one; a hard stop here stops its queued work too. */
  readonly parent: RunState | undefined
  /** Prefixes the ids of deferrals this run opens: a child shares its root's deferrals, under ids of its own. */
  readonly deferredIdPrefix: string
  readonly scope: RunScope
  readonly hostTools: readonly HostTool[]
  readonly spawnChild: (request: ChildSpawnRequest) => Promise<RunResultOfChild>
  /** The hard stop (invocation cap, deadline) this run, or a child of it, latched first. */
  hardStopError: Error | undefined

  constructor(context: RunContext) {
    this.runId = context.ids.runId
    this.executionId = context.ids.executionId
    this.medium = context.medium
    this.workflow = context.workflow
    this.clock = context.clock
    this.signal = context.signal
    this.bounds = context.bounds
    this.tree = context.tree
    this.history = context.history
    this.parent = context.parent
    this.deferredIdPrefix = context.parent === undefined ? '' : `${context.ids.executionId}.`
    this.scope = context.calls.scope
    this.hostTools = context.calls.hostTools
    this.spawnChild = context.calls.spawnChild
  }

  // The parts by the names the calls use. The bounds and the shared parts are the tree's, the same objects in a root and its children.
  get startedAt(): number {
    return this.bounds.startedAt
  }
  get deadlineMs(): number | undefined {
    return this.bounds.deadlineMs
  }
  get maxInvocations(): number | undefined {
    return this.bounds.maxInvocations
  }
  get launchMode(): LaunchMode {
    return this.bounds.launchMode
  }
  get callDefaults(): CountedBudgets {
    return this.bounds.callDefaults
  }
  get perCallOverrides(): CallBudgets | undefined {
    return this.bounds.perCallOverrides
  }
  get host(): AgentHost | undefined {
    return this.tree.host
  }
  get ledger(): InvocationLedger {
    return this.tree.ledger
  }
  get retryBudget(): RetryBudget | undefined {
    return this.tree.retryBudget
  }
  get jitter(): JitterMode {
    return this.tree.jitter
  }
  get deferrals(): Deferrals {
    return this.tree.deferrals
  }
  get signals(): SignalInbox {
    return this.tree.signals
  }
  get updates(): UpdateInbox {
    return this.tree.updates
  }
  get activity(): CallActivity {
    return this.tree.activity
  }
  get suspension(): { suspended: boolean } {
    return this.tree.suspension
  }
  get worker(): TriggerTransport | undefined {
    return this.tree.worker
  }
  get rateLimiter(): RateLimiter | undefined {
    return this.tree.rateLimiter
  }
  get onProgress(): ((progress: RunProgress) => void) | undefined {
    return this.tree.onProgress
  }
  get prices(): PriceTable | undefined {
    return this.tree.prices
  }
  get costLedger(): CostLedger | undefined {
    return this.tree.costLedger
  }
  get moneyRefusals(): MoneyRefusal[] {
    return this.tree.moneyRefusals
  }
  get workflows(): ReadonlyMap<string, WorkflowDefinition> {
    return this.tree.workflows
  }
  get replay(): ReplaySession | undefined {
    return this.history.replay
  }
  get openedDeferrals(): ReadonlySet<string> {
    return this.history.openedDeferrals
  }
  get recordedDeferrals(): ReadonlyMap<string, RecordedDeferral> {
    return this.history.recordedDeferrals
  }
  get recordedTimers(): ReadonlyMap<string, RecordedTimer> {
    return this.history.recordedTimers
  }
  get priorChildAttempts(): ReadonlyMap<string, number> {
    return this.history.priorChildAttempts
  }
  get refusesLiveWaits(): boolean {
    return this.history.refusesLiveWaits
  }

  get invocations(): number {
    return this.ledger.invocations
  }

  /** The clock reading at which the run's deadline falls; undefined without one. */
  get deadlineAt(): number | undefined {
    return this.deadlineMs === undefined ? undefined : this.startedAt + this.deadlineMs
  }

  emit(line: JournalLineInput): JournalLine {
    return this.medium.append(line)
  }

  /**
   * Awaited after a call's start line and before the call is dispatched: the
   * medium's `beforeDispatch` (a store commits the start line through its
   * lease fence); undefined when the medium has nothing to wait for.
   */
  commitStart(): Promise<void> | undefined {
    return this.medium.beforeDispatch?.()
  }

  /** Why new work may not be dispatched now (a cancellation or the passed deadline), without throwing. */
  private dispatchRefusal(): RetryRefusal & { readonly error: Error } | undefined {
    if (this.signal.aborted) return { by: 'cancelled', error: new WorkflowCancelledError({ notDispatched: [] }) }
    if (this.deadlineMs !== undefined) {
      const elapsedMs = this.clock.now() - this.startedAt
      if (elapsedMs >= this.deadlineMs) return { by: 'run-deadline', error: new WorkflowRunDeadlineError({ deadlineMs: this.deadlineMs, elapsedMs }) }
    }
    return undefined
  }

  /** Why one more physical agent attempt may not start now: a cancellation, the deadline or the invocation cap. Charges nothing. */
  private invocationRefusal(): RetryRefusal & { readonly error: Error } | undefined {
    const refusal = this.dispatchRefusal()
    if (refusal !== undefined) return refusal
    if (this.maxInvocations !== undefined && this.invocations + 1 > this.maxInvocations) {
      return { by: 'invocation-cap', error: new WorkflowInvocationCapError({ limit: this.maxInvocations, attempted: this.invocations + 1 }) }
    }
    return undefined
  }

  /** Refuses new work once the run is cancelled or past its deadline. */
  checkDispatch(): void {
    const refusal = this.dispatchRefusal()
    if (refusal !== undefined) this.refuse(refusal)
  }

  /** Charges one physical agent attempt against the invocation cap. */
  chargeInvocation(): void {
    const refusal = this.invocationRefusal()
    if (refusal !== undefined) this.refuse(refusal)
    this.ledger.invocations += 1
  }

  /**
   * Asks the run for another agent attempt of a call whose own rule allows it:
   * the cancellation, the deadline and the invocation cap first, then the
   * retry budget. When nothing refuses, the attempt is charged and its retry
   * drawn from the budget; when something does, nothing is charged and the
   * refusal is returned for the caller to journal before it ends the call.
   */
  claimAgentRetry(): RetryRefusal | undefined {
    const refusal = this.invocationRefusal()
    if (refusal !== undefined) return refusal
    if (this.retryBudget !== undefined && !this.retryBudget.tryWithdraw()) return { by: 'retry-budget' }
    this.ledger.invocations += 1
    return undefined
  }

  /** Ends the call with a refusal's error: a cancellation as it is, a hard stop latched across the group tree. */
  refuse(refusal: RetryRefusal): never {
    if (refusal.error === undefined) throw new Error(`refuse(): a ${refusal.by} refusal has no error of its own`)
    if (refusal.by === 'cancelled') throw refusal.error
    this.hardStop(refusal.error)
  }

  /** Ends the run with a hard stop (the invocation cap, the deadline). */
  hardStop(error: Error): never {
    // Latch first, so queued branches anywhere in the group tree stop dispatching.
    this.latchHardStop(error)
    throw error
  }

  /** Latches a hard stop here and in every run up to the root: the cap and the deadline are the root's. */
  latchHardStop(error: Error): void {
    this.hardStopError ??= error
    this.scope.latchHardStop(error)
    this.parent?.latchHardStop(error)
  }
}
