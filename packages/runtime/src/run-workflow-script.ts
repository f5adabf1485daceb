import { abortAs, forwardRequester, requesterOf } from './cancel-requests.js'
import { setMaxListeners } from 'node:events'
import { join, resolve } from 'node:path'
import {
  type JournalLine,
  type JournalLineInput,
  type RunCost,
  type RunView,
  type SignalReceivedLine,
  createRunView,
  renderOutputsReadme,
  serializeError,
  type SerializedError,
} from '@locus/journal'
import {
  WorkflowGroupFailureError,
  createRunScope,
  parallel,
  pipeline,
  runInScope,
  toGroupFailureEnvelope,
} from '@locus/groups'
import {
  type JsonValue,
  type RunDisposition,
  classifyOutcome,
  hasLocusErrorCode,
  jsonDepthProblem,
  prepareWorkflowResult,
} from '@locus/outcome'
import { type Recording, type ReplayReport, createReplaySession } from '@locus/replay'
import { systemClock } from '@locus/retry'
import { callAgent } from './agent-call.js'
import { LAUNCH_MODE_BUDGETS, overrideBudgets } from './budgets.js'
import { type WorkflowContext, type WorkflowDefinition, isWorkflowDefinition } from './define.js'
import { RuntimeInputError } from './errors.js'
import { type RunOptions, type StartSignal, parseRunOptions } from './run-options.js'
import { type ChildSpawnRequest, type RecordedDeferral, type RecordedTimer, type RunBounds, RunState, type RunResultOfChild, type RunTree, runRetryBudget } from './run-state.js'
import { callSpawn } from './child-call.js'
import { type ExecutionMedium, storeMedium } from './execution-medium.js'
import { type DeferredAnswerOutcome, type DeferredDecider, Deferrals, deciderFields } from './deferrals.js'
import { createRunId } from './ids.js'
import { type CreateExecutionOptions, type ExecutionWriter, type Ownership, type RunStore, RunExistsError, createFileRunStore } from '@locus/store'
import { recordRunOutcome } from './run-metrics.js'
import { RUN_RESULT_SCHEMA, type RunResultFile } from './run-result-schema.js'
import { judgeRunAnswer } from '@locus/partial'
import { type UsdAmount, formatUsd } from '@locus/cost'
import { checkMoneyBudget, endedOnMoneyRefusal, judgeWithMoneyRefusals, openRunLedger } from './run-money.js'
import { callTool } from './tool-call.js'
import { callSleep } from './sleep-call.js'
import { type RecordedSignals, SignalInbox, checkSignal } from './signals.js'
import { callWaitForSignal } from './signal-wait.js'
import { type RecordedUpdates, UpdateInbox } from './updates.js'
import { CallActivity } from './call-activity.js'
import { refuseLiveCalls } from './check-only-replay.js'
import { describeZodIssues } from './zod-issues.js'
import { hostRateLimiter } from './rate-limits.js'

export { RUN_RESULT_SCHEMA, RunResultSchema } from './run-result-schema.js'

/** What a run ends with: the same facts its `result.json`, `run_end` line and `outputs/README.md` hold. */
export interface RunResult {
  readonly runId: string
  readonly executionId: string
  /** The root run's directory. */
  readonly runDir: string
  /** This execution's directory: the root run's own, or a nested resume or replay execution. */
  readonly executionDir: string
  /** Where a person finds this execution's journal (the file store: its `journal.jsonl`); for messages only. */
  readonly journalLocation: string
  readonly disposition: RunDisposition
  /** True only for a `completed` run. */
  readonly ok: boolean
  /** The detached root result; the group failure envelope when a group failure escaped; null otherwise. */
  readonly result: JsonValue
  readonly error?: SerializedError
  /** Set on a resumed or replayed execution: which recorded calls replayed, diverged or went missing. */
  readonly replay?: ReplayReport
  /**
   * Set when the execution was suspended (`suspend()`): the run did not end.
   * No `run_end`, `result.json` or outputs README was written, `disposition`
   * is `cancelled` and `ok` false for this execution only, and `resume`
   * continues the run.
   */
  readonly suspended?: true
  /**
   * What the run's LLM requests cost, every execution of it included (its
   * {@link RunView}'s `cost`, as `locus show` reads it); absent when the run
   * was not priced. A child's requests are in its own execution.
   */
  readonly cost?: RunCost
}

/** What a resumed or replayed execution starts from. Internal to the runtime. */
export interface LaunchInternals {
  /** Which execution this is: a fresh run (`root`), or a `resume` or `replay` whose id the store allocates. @default 'root' */
  readonly kind?: 'root' | 'resume' | 'replay'
  readonly recording?: Recording
  readonly replayFailures?: boolean
  /** A check-only replay: a call the replay would run live throws instead, so nothing runs live (the deploy check). */
  readonly refuseLiveCalls?: boolean
  readonly resumeOf?: string
  /** A resume: the fold of the executions before it, which its own lines go on into, so the run's cost counts every execution. */
  readonly runView?: RunView
  /** Deferrals earlier executions opened that are still waiting. */
  readonly openDeferrals?: readonly string[]
  /** Every deferral earlier executions opened: deadlines, and the expiries a resume serves from the journal. */
  readonly recordedDeferrals?: ReadonlyMap<string, RecordedDeferral>
  /** The run's ownership, claimed by the caller for this execution (a resume); released when the execution ends. */
  readonly ownership?: Ownership
  /** The id source of a fresh run without `runId` (tests inject one that clashes). @default createRunId */
  readonly newRunId?: (now: Date) => string
  /** Spawn attempts earlier executions started, by ordinal: a resumed spawn numbers its next attempt after them. */
  readonly priorChildAttempts?: ReadonlyMap<string, number>
  /** Money earlier executions of the run spent (a resume): its cost budget counts it as spent. */
  readonly spentBefore?: UsdAmount
  /** Signals and signal waits earlier executions journaled (a resume's and a replay's). */
  readonly signals?: RecordedSignals
  /** Updates and their ends earlier executions journaled (a resume's and a replay's). */
  readonly updates?: RecordedUpdates
  /** Timers earlier executions journaled, by timer id (a resume's and a replay's). */
  readonly timers?: ReadonlyMap<string, RecordedTimer>
  /** Set on a child run: the run whose script spawned it, and the spawn's call id there. */
  readonly parent?: { readonly run: RunState; readonly childCallId: string }
}

/** Opens a child execution of the same stored run, exclusively; resolves to the opener of its medium. */
type OpenChildMedium = (childExecutionId: string) => Promise<(onLine: (line: JournalLine) => void) => ExecutionMedium>

/**
 * An execution as the runtime drives it, inside this package: what the one
 * public {@link import('./create-runtime.js').RunHandle} made by `createRuntime` reaches through.
 */
export interface ExecutionHandle {
  readonly runId: string
  readonly runDir: string
  /**
   * Host cancellation: started work settles, new work stops, the run ends
   * `cancelled`. The first request is journaled as `run_cancel_requested`
   * with `reason` and `by`, who asked (`host` when not given).
   */
  cancel(reason?: string, by?: string): void
  /** Writes any journal lines still buffered (durability `none`) to the file now, as before an abrupt exit. */
  flush(): void
  /**
   * Answers an open deferral with the tool's result (checked against its
   * output schema; an invalid result leaves it open). `decider` names who
   * decided and how, for the `deferred_settled` line.
   */
  resolveDeferred(deferredId: string, result: unknown, decider?: DeferredDecider): DeferredAnswerOutcome
  /** Answers an open deferral with the seed's `tool.error`: terminal unless `retryable`. */
  rejectDeferred(deferredId: string, error: { readonly error: string; readonly retryable?: boolean; readonly code?: string }, decider?: DeferredDecider): DeferredAnswerOutcome
  /** The deferrals waiting now. */
  pendingDeferrals(): string[]
  /** Reads the run's update mailbox now rather than at the next poll (a sender in this process just kept one). */
  lookForUpdates(): void
  /** Reads the run's signal mailbox now rather than at the next poll (a sender in this process just kept one). */
  lookForSignals(): void
  /**
   * The run's live fold, kept as lines are written: this execution's lines,
   * and for a resume the run's earlier executions too. Read without touching
   * the store; undefined until the execution exists.
   */
  view(): RunView | undefined
  /**
   * Suspends the execution without ending the run: calls in flight are
   * abandoned as on cancel, one `log` line records `reason`, and no `run_end`
   * is written; `done` resolves with `suspended: true`. A no-op once the
   * script has settled or the run is cancelled.
   */
  suspend(reason?: string): void
  /** True while at least one call is in flight and every one waits: a deferred tool for its answer, or a `sleep()` for its timer. */
  waitingOnly(): boolean
  readonly done: Promise<RunResult>
}

/** A bare script: what `runWorkflowScript` also accepts instead of a definition. */
export type WorkflowFunction = (context: WorkflowContext<unknown>) => unknown

/**
 * A workflow as the runtime runs it: a definition as it is, a bare script as
 * a definition named after its function (`anonymous` without a name).
 *
 * @throws RuntimeInputError `WORKFLOW_DEFINITION_INVALID` for a definition with no name, or something that is neither
 */
export function toWorkflowDefinition(workflow: WorkflowDefinition | WorkflowFunction): WorkflowDefinition {
  if (typeof workflow === 'function') return { name: workflow.name === '' ? 'anonymous' : workflow.name, run: workflow }
  if (isWorkflowDefinition(workflow) || (typeof workflow === 'object' && typeof (workflow as { run?: unknown }).run === 'function')) {
    if (typeof workflow.name !== 'string' || workflow.name === '') {
      throw new RuntimeInputError('WORKFLOW_DEFINITION_INVALID', 'The workflow has no name; give defineWorkflow({ name }) a non-empty string.', ['name: required'])
    }
    return workflow
  }
  throw new RuntimeInputError(
    'WORKFLOW_DEFINITION_INVALID',
    'runWorkflowScript expects a workflow made by defineWorkflow() or an async function; got ' + typeof workflow,
    ['workflow: not a workflow'],
  )
}

interface Settled {
  readonly disposition: RunDisposition
  readonly result: JsonValue
  readonly error?: SerializedError
}

function isCancellation(error: unknown): boolean {
  return hasLocusErrorCode(error, 'WORKFLOW_CANCELLED')
}

/** Decides the one disposition every surface of the run will show. */
function settle(outcome: { returned: true; value: unknown } | { returned: false; error: unknown }, cancelled: boolean): Settled {
  if (!outcome.returned) {
    const error = serializeError(outcome.error)
    if (cancelled || isCancellation(outcome.error)) return { disposition: 'cancelled', result: null, error }
    if (WorkflowGroupFailureError.isInstance(outcome.error)) {
      return { disposition: 'failed', result: toGroupFailureEnvelope(outcome.error) as unknown as JsonValue, error }
    }
    return { disposition: 'failed', result: null, error }
  }
  let detached: JsonValue
  try {
    detached = prepareWorkflowResult(outcome.value)
  } catch (error) {
    return { disposition: cancelled ? 'cancelled' : 'failed', result: null, error: serializeError(error) }
  }
  if (cancelled) return { disposition: 'cancelled', result: detached }
  return { disposition: classifyOutcome(detached).failed ? 'failed' : 'completed', result: detached }
}

/** The default runs directory: `<cwd>/.locus-pi/runs`. */
export function resolveRunsDir(options: Pick<RunOptions, 'runsDir' | 'cwd'>): string {
  return options.runsDir ?? join(resolve(options.cwd ?? process.cwd()), '.locus-pi', 'runs')
}

/**
 * The input a workflow's schema makes of `input` (unchanged when it declares
 * none). @throws RuntimeInputError `WORKFLOW_INPUT_INVALID`, naming each problem
 */
export function parseWorkflowInput(definition: Pick<WorkflowDefinition, 'name' | 'input'>, input: unknown): unknown {
  // Before anything is created: a value this deep would overflow the journal's serializers.
  const tooDeep = jsonDepthProblem(input, 'input')
  if (tooDeep !== undefined) throw new RuntimeInputError('WORKFLOW_INPUT_INVALID', `Invalid input for workflow "${definition.name}": ${tooDeep}.`, [tooDeep])
  if (definition.input === undefined) return input
  const parsed = definition.input.safeParse(input)
  if (parsed.success) return parsed.data
  const issues = describeZodIssues(parsed.error, 'input')
  throw new RuntimeInputError('WORKFLOW_INPUT_INVALID', `Invalid input for workflow "${definition.name}":\n  ${issues.join('\n  ')}`, issues)
}

/**
 * Journals a line from an abort listener. A listener must not throw: the event target would rethrow the error as an
 * uncaught exception and take the process down. A writer that refuses the line has failed already (a lost lease, a
 * closed journal), and that failure reaches the run's ending through the writer, so the refusal is dropped here.
 */
function emitFromListener(run: RunState, line: JournalLineInput): void {
  try {
    run.emit(line)
  } catch {
    // Reported by the writer's own failure, not here.
  }
}

/** Aborts `target` when `source` aborts (at once when it has), with its reason; returns the function that stops forwarding. */
function forwardAbort(source: AbortSignal | undefined, target: AbortController): () => void {
  const forward = (): void => {
    if (source !== undefined) forwardRequester(source, target.signal)
    target.abort(source?.reason)
  }
  if (source?.aborted === true) forward()
  else source?.addEventListener('abort', forward, { once: true })
  return () => {
    source?.removeEventListener('abort', forward)
  }
}

/** Starts a run, a resumed execution or a replay. Internal. */
export function launchRun<TInput>(workflow: WorkflowDefinition<TInput> | WorkflowFunction, given: RunOptions, internals: LaunchInternals): ExecutionHandle {
  parseRunOptions(given)
  const definition = toWorkflowDefinition(workflow)
  const input = parseWorkflowInput(definition, given.input)
  // A signal sent with the start is checked with the input, before anything is written; a resume or a child ignores it.
  const startSignal = internals.parent === undefined && (internals.kind ?? 'root') === 'root' ? checkStartSignal(definition, given.startSignal) : undefined
  // Before anything is written: a money budget needs prices for every model the run may call. A replay calls no host and spends nothing.
  if (internals.parent === undefined && internals.kind !== 'replay') checkMoneyBudget(definition, given)
  // One suspend signal for the handle's suspend() and the caller's suspendSignal.
  const suspender = new AbortController()
  const stopForwarding = forwardAbort(given.suspendSignal, suspender)
  const options: RunOptions = { ...given, suspendSignal: suspender.signal, ...(startSignal === undefined ? {} : { startSignal }) }
  let handle: ExecutionHandle
  try {
    // `{ runsDir }` is exactly `{ store: createFileRunStore(runsDir) }`: every run goes through a store.
    handle = launchInStore(definition, input, options, internals, suspender)
  } catch (error) {
    stopForwarding()
    throw error
  }
  void handle.done.finally(stopForwarding).catch(() => undefined)
  return handle
}

/**
 * A signal sent with a run's start, checked against the workflow's declared
 * signals as `runtime.signal` checks one.
 *
 * @throws RuntimeInputError `RUN_OPTIONS_INVALID` for an undeclared name (naming the declared ones) or a payload failing its schema
 */
export function checkStartSignal(
  definition: Pick<WorkflowDefinition, 'name' | 'signals'>,
  signal: StartSignal | undefined,
): { readonly name: string; readonly payload: JsonValue; readonly from: string } | undefined {
  if (signal === undefined) return undefined
  const checked = checkSignal(definition.signals, definition.name, signal.name, signal.payload)
  if (checked.ok) return { name: signal.name, payload: checked.payload, from: signal.from ?? 'host' }
  if (checked.status === 'invalid') {
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `startSignal "${signal.name}": the payload does not fit its schema: ${checked.issues.join('; ')}`, checked.issues.map((issue) => `startSignal.${issue}`))
  }
  throw new RuntimeInputError('RUN_OPTIONS_INVALID', `startSignal: ${checked.message}`, [`startSignal.name: "${signal.name}" is not declared`])
}

/** The store a run's options name: `store`, or the file store over `runsDir` (by default `<cwd>/.locus-pi/runs`). */
export function storeOf(options: Pick<RunOptions, 'store' | 'runsDir' | 'cwd'>): RunStore {
  return options.store ?? createFileRunStore(resolveRunsDir(options))
}

/** How many fresh ids a run tries before giving up when each one is already taken. */
export const RUN_ID_ATTEMPTS = 5

/**
 * Creates a fresh run's root execution exclusively in the store: a taken id
 * the caller chose is the store's `RunExistsError` (nothing written); a
 * generated id that clashes is replaced by a new one, up to {@link RUN_ID_ATTEMPTS} tries.
 */
async function createRoot(
  store: RunStore,
  ids: { readonly chosen: boolean; readonly first: string; readonly next: () => string },
  create: Omit<CreateExecutionOptions, 'runId' | 'kind'>,
  onRunId: (runId: string) => void,
): Promise<ExecutionWriter> {
  if (ids.chosen) return store.createExecution({ ...create, runId: ids.first, kind: 'root' })
  let last: unknown
  for (let attempt = 0; attempt < RUN_ID_ATTEMPTS; attempt += 1) {
    const runId = attempt === 0 ? ids.first : ids.next()
    onRunId(runId)
    try {
      return await store.createExecution({ ...create, runId, kind: 'root' })
    } catch (error) {
      if (!RunExistsError.isInstance(error)) throw error
      last = error
    }
  }
  throw last
}

/**
 * Starts an execution in a `RunStore` (files, memory, PostgreSQL...): the
 * store creates the execution exclusively before the script starts, a root
 * run claims the run's ownership there, and every line and artifact goes
 * through the store.
 */
function launchInStore<TInput>(definition: WorkflowDefinition<TInput>, input: unknown, options: RunOptions, internals: LaunchInternals, suspender: AbortController): ExecutionHandle {
  const store = storeOf(options)
  const clock = options.clock ?? systemClock
  const kind = internals.kind ?? 'root'
  if (kind !== 'root' && options.runId === undefined) throw new Error('launchRun: a nested execution needs the run id of its root run')
  const newRunId = internals.newRunId ?? createRunId
  let runId = options.runId ?? newRunId(new Date(clock.now()))
  const firstRunId = runId
  // Cancels before the execution exists reach it through the same signal the run listens on.
  const early = new AbortController()
  const stopForwarding = forwardAbort(options.signal, early)
  let started: ExecutionHandle | undefined
  let writer: ExecutionWriter | undefined
  let forward: (line: JournalLine) => void = () => undefined
  const durability = options.durability ?? 'batch'
  const openChildMedium: OpenChildMedium = async (childExecutionId) => {
    let forwardChild: (line: JournalLine) => void = () => undefined
    const child = await store.createExecution({ runId, kind: 'child', executionId: childExecutionId, durability, onLine: (line) => {
      forwardChild(line)
    } })
    return (onLine) => {
      forwardChild = onLine
      return storeMedium(child, store, clock)
    }
  }
  const done = (async () => {
    let ownership = internals.ownership
    try {
      const create = { durability, onLine: (line: JournalLine) => {
        forward(line)
      } }
      writer =
        kind === 'root'
          ? await createRoot(store, { chosen: options.runId !== undefined, first: firstRunId, next: () => newRunId(new Date(clock.now())) }, create, (id) => {
              runId = id
            })
          : await store.createExecution({ runId, kind, ...create })
      // A fresh run is owned by its root execution from the start; a resume brings the ownership it claimed first.
      if (kind === 'root') ownership = await store.claim({ runId, executionId: writer.executionId })
      else ownership?.setExecutionId(writer.executionId)
      const opened = writer
      started = startExecution(definition, input, { ...options, signal: early.signal }, internals, {
        runId,
        executionId: opened.executionId,
        openMedium: (onLine) => {
          forward = onLine
          return storeMedium(opened, store, clock)
        },
        openChildMedium,
        clock,
        ownership,
      })
      return await started.done
    } finally {
      stopForwarding()
      // Whatever the ending (completed, failed, cancelled, refused, or an error writing it down), the run is free again.
      await ownership?.release()
    }
  })()
  return {
    get runId() {
      return runId
    },
    get runDir() {
      return writer?.runLocation ?? `${store.kind}:${runId}`
    },
    cancel: (reason?: string, by?: string) => {
      abortAs(early, reason ?? 'cancelled by the host', by)
    },
    flush: () => {
      started?.flush()
    },
    resolveDeferred: (deferredId, result, decider) => started?.resolveDeferred(deferredId, result, decider) ?? { ok: false, status: 'unknown', message: 'the run has not started yet' },
    rejectDeferred: (deferredId, error, decider) => started?.rejectDeferred(deferredId, error, decider) ?? { ok: false, status: 'unknown', message: 'the run has not started yet' },
    pendingDeferrals: () => started?.pendingDeferrals() ?? [],
    lookForUpdates: () => {
      started?.lookForUpdates()
    },
    lookForSignals: () => {
      started?.lookForSignals()
    },
    view: () => started?.view(),
    // The execution listens on the suspend signal launchRun made (options.suspendSignal).
    suspend: (reason?: string) => {
      suspender.abort(reason ?? 'suspended by the host')
    },
    waitingOnly: () => started?.waitingOnly() ?? false,
    done,
  }
}

/** Everything after the execution is created and the run claimed: the journal, the run state, the script. */
function startExecution<TInput>(
  definition: WorkflowDefinition<TInput>,
  input: unknown,
  options: RunOptions,
  internals: LaunchInternals,
  claimed: {
    readonly runId: string
    readonly executionId: string
    /** Opens where the execution writes; `onLine` sees every line once it is in the journal. */
    readonly openMedium: (onLine: (line: JournalLine) => void) => ExecutionMedium
    /** Opens the execution a child run of this one writes to. */
    readonly openChildMedium: OpenChildMedium
    readonly clock: NonNullable<RunOptions['clock']>
    readonly ownership: Ownership | undefined
  },
): ExecutionHandle {
  const { runId, executionId, clock, ownership } = claimed

  const controller = new AbortController()
  // Every in-flight call listens on the run's signal; a wide fan-out is not a leak.
  setMaxListeners(0, controller.signal)
  const stopHostAbort = forwardAbort(options.signal, controller)

  const parent = internals.parent?.run
  // A child inherits its root's launch mode and run-level per-call budgets, whatever its own options say.
  const launchMode = parent?.launchMode ?? options.launchMode ?? 'interactive'
  const { budgets: callDefaults, increases } = overrideBudgets(LAUNCH_MODE_BUDGETS[launchMode], parent?.perCallOverrides ?? options.budgets?.perCall)
  // The README is rendered from this fold at the end, so memory does not grow with the length of the run.
  const view = createRunView()
  // A resume also folds into the run's earlier executions, for figures (its cost) that are the run's, not this execution's.
  const runView = internals.runView
  // A child shares its root's suspension: once the root is suspended, nothing anywhere in the run is written.
  const suspension = parent?.suspension ?? { suspended: false }
  const medium = mutedOnSuspend(
    claimed.openMedium((line) => {
      view.apply(line)
      runView?.apply(line)
      options.onEvent?.(line)
    }),
    suspension,
  )
  const startedAt = clock.now()
  const kind = internals.kind ?? 'root'
  // `run` is made last, from the parts below; the parts that journal reach it only once the script runs.
  // eslint-disable-next-line prefer-const -- assigned once, after the closures that read it are made
  let run: RunState
  const journal = { emit: (line: JournalLineInput) => run.emit(line), commitStart: () => run.commitStart() }
  // A child shares its root's bounds: bounded by its deadline and cap, measured from the root's start.
  // A root whose workflow counts its deadline from its enqueue has already spent the time it waited to start.
  const bounds: RunBounds = parent?.bounds ?? {
    startedAt: startedAt - (definition.deadlineCounts === 'from-enqueue' && kind === 'root' ? (options.queued?.waitedMs ?? 0) : 0),
    deadlineMs: options.budgets?.deadlineMs,
    maxInvocations: options.budgets?.maxTotalAgentInvocations,
    launchMode,
    callDefaults,
    perCallOverrides: options.budgets?.perCall,
  }
  // A child shares its root's tree: one ledger, one retry budget, one money budget, one mailbox for the whole run.
  const tree: RunTree = parent?.tree ?? {
    host: options.host,
    ledger: { invocations: 0 },
    retryBudget: runRetryBudget(options.retryBudget, clock),
    jitter: options.jitter ?? 'none',
    deferrals: new Deferrals(medium.deferredAnswers, (deferredId, problems) => {
      journal.emit({ type: 'log', level: 'warn', message: `an answer kept for deferral ${deferredId} was refused and withdrawn; the deferral stays open: ${problems.join('; ')}`, data: { deferredId, problems: [...problems] } })
    }),
    // A replay reads signals and updates from its recording only; a live execution also from the run's mailbox.
    signals: new SignalInbox(journal, kind === 'replay' ? undefined : medium.deferredAnswers, internals.signals ?? { received: [], waits: new Map() }),
    updates: new UpdateInbox(
      { ...journal, track: (call) => run.activity.track(call) },
      kind === 'replay' ? undefined : medium.deferredAnswers,
      definition.updates,
      internals.updates ?? { received: [], ends: new Map() },
    ),
    activity: new CallActivity(options.onWaitingChange),
    suspension,
    worker: options.worker,
    // The runtime's limits, else the host's own (one limiter per host object).
    rateLimiter: options.rateLimiter ?? hostRateLimiter(options.host, clock),
    onProgress: options.onProgress,
    prices: options.prices,
    // A resume starts from what earlier executions spent; a replay spends nothing.
    costLedger: kind === 'replay' ? undefined : openRunLedger(checkMoneyBudget(definition, options), internals.spentBefore),
    moneyRefusals: [],
    workflows: workflowMap(options.workflows),
  }
  const replaySession =
    internals.recording === undefined
      ? undefined
      : createReplaySession(internals.recording, {
          replayFailures: internals.replayFailures ?? false,
          onDiverged: (divergence) => {
            journal.emit({ type: 'replay_diverged', ordinal: divergence.ordinal, expectedKey: divergence.expectedKey, actualKey: divergence.actualKey, fields: [...divergence.fields] })
          },
        })
  run = new RunState({
    ids: { runId, executionId },
    medium,
    workflow: definition,
    clock,
    signal: controller.signal,
    bounds,
    tree,
    history: {
      replay: replaySession !== undefined && internals.refuseLiveCalls === true ? refuseLiveCalls(replaySession) : replaySession,
      openedDeferrals: new Set(internals.openDeferrals ?? []),
      recordedDeferrals: internals.recordedDeferrals ?? new Map(),
      recordedTimers: internals.timers ?? new Map(),
      priorChildAttempts: internals.priorChildAttempts ?? new Map(),
      refusesLiveWaits: internals.refuseLiveCalls === true,
    },
    calls: {
      scope: createRunScope({
        signal: controller.signal,
        ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
        observer: (event) => {
          journal.emit(event)
        },
      }),
      hostTools: Object.entries(definition.tools ?? {}).map(([name, tool]) => ({
        name,
        description: tool.description,
        input: tool.input,
        invoke: (args: unknown) => run.activity.track(() => callTool(run, name, args)),
      })),
      spawnChild: (request) => runChild(run, options, claimed, request),
    },
    parent,
  })

  run.emit({
    type: 'run_start',
    workflow: definition.name,
    input: prepareWorkflowResult(input),
    options: prepareWorkflowResult({
      launchMode,
      concurrency: options.concurrency ?? null,
      durability: options.durability ?? 'batch',
      budgets: { ...options.budgets, perCall: callDefaults, ...(run.costLedger?.limit === undefined ? {} : { maxCostUsd: formatUsd(run.costLedger.limit) }) },
      host: options.host?.name ?? null,
      // What a resume needs to build the host again: plain JSON from the host, never a secret.
      ...(options.host?.settings === undefined ? {} : { hostSettings: safeJson(options.host.settings) }),
      ...(options.worker?.settings === undefined ? {} : { workerSettings: safeJson(options.worker.settings) }),
      source: options.source ?? null,
      ...(options.retryBudget === undefined ? {} : { retryBudget: options.retryBudget }),
      ...(options.jitter === undefined ? {} : { jitter: options.jitter }),
      ...(run.prices === undefined ? {} : { priceTable: run.prices.version }),
      ...(options.allowUnpriced === true ? { allowUnpriced: true } : {}),
    }),
    ...(internals.resumeOf === undefined ? {} : { resumeOf: internals.resumeOf }),
    ...(definition.workspaceMode === undefined ? {} : { workspaceMode: definition.workspaceMode }),
    ...(parent === undefined ? {} : { parentRunId: parent.runId, parentExecutionId: parent.executionId, parentCallId: internals.parent?.childCallId }),
  })
  // The wait before the start, evidence beside the start itself (a resume's wait is its own).
  if (parent === undefined && options.queued !== undefined) {
    run.emit({ type: 'queued', keys: [...options.queued.keys], reason: options.queued.reason, waitedMs: options.queued.waitedMs })
  }
  if (ownership?.tookOver !== undefined) {
    const from = ownership.tookOver.previous
    run.emit({
      type: 'log',
      level: 'warn',
      message:
        from === undefined
          ? "took over the run's ownership, left unreadable by a process that died while taking it"
          : typeof from === 'string'
            ? `took over the run's ownership from ${from}, whose hold lapsed`
            : `took over the run's ownership lock from process ${from.pid} (execution ${from.executionId}), which is no longer running`,
      ...(from === undefined ? {} : { data: typeof from === 'string' ? { owner: from } : { pid: from.pid, hostname: from.hostname, executionId: from.executionId, startedAt: from.startedAt } }),
    })
  }
  for (const increase of increases) {
    run.emit({ type: 'budget_change', budget: increase.budget, scope: 'run', from: increase.from, to: increase.to, reason: `run-level override of the ${launchMode} default` })
  }

  // Signal-with-start: the run's first signal, journaled before the script runs, so a wait on it returns at once.
  if (parent === undefined && (internals.kind ?? 'root') === 'root' && options.startSignal !== undefined) {
    const { name, payload, from } = options.startSignal
    const line = run.emit({ type: 'signal_received', name, payload: (payload ?? null) as JsonValue, from: from ?? 'host', via: 'start', signalSeq: 0 }) as SignalReceivedLine
    run.signals.receivedAtStart(line)
  }

  const context: WorkflowContext<unknown> = {
    input,
    agent: (prompt, callOptions) => run.activity.track(() => callAgent(run, prompt, callOptions)),
    tool: (name, args, callOptions) => run.activity.track(() => callTool(run, name, args, callOptions)),
    spawn: (workflow, childInput, spawnOptions) => callSpawn(run, workflow, childInput, spawnOptions),
    sleep: (duration) => run.activity.track(() => callSleep(run, duration)),
    waitForSignal: (name, waitOptions) => run.activity.track(() => callWaitForSignal(run, name, waitOptions)),
    onSignal: (name, handler) => {
      if (definition.signals === undefined || !Object.hasOwn(definition.signals, name)) {
        throw new RuntimeInputError('RUN_OPTIONS_INVALID', `onSignal("${name}"): the workflow declares no such signal. Declared: ${Object.keys(definition.signals ?? {}).join(', ') || '(none)'}.`, [`signal: "${name}" is not declared`])
      }
      run.signals.onSignal(name, handler)
    },
    onUpdate: (name, handler, updateOptions) => {
      if (definition.updates === undefined || !Object.hasOwn(definition.updates, name)) {
        throw new RuntimeInputError('RUN_OPTIONS_INVALID', `onUpdate("${name}"): the workflow declares no such update. Declared: ${Object.keys(definition.updates ?? {}).join(', ') || '(none)'}.`, [`update: "${name}" is not declared`])
      }
      run.updates.onUpdate(name, handler, updateOptions)
    },
    parallel,
    pipeline,
    signal: controller.signal,
    runId,
    log: (message, data) => {
      run.emit({ type: 'log', level: 'info', message, ...(data === undefined ? {} : { data: safeJson(data) }) })
    },
  }

  // Suspending: one log line says why, then nothing more is written and the script is aborted as on cancel.
  let scriptSettled = false
  const suspendSignal = parent === undefined ? options.suspendSignal : undefined
  const onSuspend = (): void => {
    if (scriptSettled || suspension.suspended || controller.signal.aborted) return
    const reason = suspendSignal?.reason === undefined ? 'suspended by the host' : String(suspendSignal.reason)
    emitFromListener(run, { type: 'log', level: 'info', message: `execution suspended: ${reason}; the run has not ended, and resume continues it`, data: { suspended: true, reason } })
    suspension.suspended = true
    controller.abort(`suspended: ${reason}`)
  }
  if (suspendSignal?.aborted === true) onSuspend()
  else suspendSignal?.addEventListener('abort', onSuspend, { once: true })

  // A cancel request is journaled once, by the execution it stops (a child's stop is its root's).
  const onCancelRequested = (): void => {
    if (scriptSettled || suspension.suspended) return
    const reason: unknown = controller.signal.reason
    emitFromListener(run, {
      type: 'run_cancel_requested',
      reason: typeof reason === 'string' ? reason : reason instanceof Error ? reason.message : 'cancelled by the host',
      by: requesterOf(controller.signal) ?? 'host',
    })
  }
  if (parent === undefined) {
    if (controller.signal.aborted) onCancelRequested()
    else controller.signal.addEventListener('abort', onCancelRequested, { once: true })
  }

  // Only a workflow that declares signals reads the mailbox, from the start: a signal sent early is journaled early.
  if (parent === undefined && definition.signals !== undefined) run.signals.open()
  // Likewise updates: one sent early is journaled early, and run once its handler is registered.
  if (parent === undefined && definition.updates !== undefined) run.updates.open()

  const done = (async (): Promise<RunResult> => {
    try {
      return await finishExecution()
    } finally {
      // The journals its recording read answers from are closed, whatever the ending.
      internals.recording?.close?.()
    }
  })()

  async function finishExecution(): Promise<RunResult> {
    let outcome: { returned: true; value: unknown } | { returned: false; error: unknown }
    try {
      const value: unknown = await runInScope(run.scope, () => definition.run(context as never))
      outcome = { returned: true, value }
    } catch (error) {
      outcome = { returned: false, error }
    }
    scriptSettled = true
    if (parent === undefined) {
      run.signals.close()
      run.updates.close()
      // A handler still running journals its end before run_end. A suspended or cancelled execution does not wait:
      // a late end is dropped, and a resume runs that update again.
      if (!suspension.suspended && !controller.signal.aborted) await run.updates.settled()
      run.updates.silence()
    }
    suspendSignal?.removeEventListener('abort', onSuspend)
    stopHostAbort()
    if (suspension.suspended) {
      // The run goes on elsewhere: no metrics, no run_end, no result.json, no README.
      medium.close()
      await medium.settled()
      return {
        runId,
        executionId,
        runDir: medium.runDir,
        executionDir: medium.executionDir,
        journalLocation: medium.journalLocation,
        disposition: 'cancelled',
        ok: false,
        result: null,
        suspended: true,
        ...(run.replay === undefined ? {} : { replay: run.replay.report() }),
      }
    }
    const settled = settle(outcome, controller.signal.aborted)
    const ok = settled.disposition === 'completed'
    const endedAt = clock.now()
    // A child's outcome is its parent's business; only a root run is a row in the metrics.
    if (options.metrics !== undefined && parent === undefined) {
      try {
        await recordRunOutcome(options.metrics, { runId, workflow: definition.name, startedAt: new Date(startedAt), disposition: settled.disposition, result: settled.result, cost: (runView ?? view).cost })
      } catch (error) {
        // Metrics are a report about the run, never a reason to change its outcome.
        run.emit({ type: 'log', level: 'error', message: `could not record the run's outcome metrics: ${error instanceof Error ? error.message : String(error)}` })
      }
    }
    // Judged once, here: every surface reads these from run_end or result.json.
    const judgement = judgeWithMoneyRefusals(
      judgeRunAnswer(settled.disposition, settled.result),
      parent === undefined ? run.moneyRefusals : [],
      !outcome.returned && endedOnMoneyRefusal(outcome.error),
    )
    const answer = { answerOutcome: judgement.answerOutcome, gaps: [...judgement.gaps], caveats: [...judgement.caveats] }
    run.emit({
      type: 'run_end',
      disposition: settled.disposition,
      ok,
      result: settled.result,
      ...(settled.error === undefined ? {} : { error: settled.error }),
      durationMs: endedAt - startedAt,
      ...answer,
    })
    medium.close()
    medium.writeResult({
      schema: RUN_RESULT_SCHEMA,
      runId,
      executionId,
      workflow: definition.name,
      disposition: settled.disposition,
      ok,
      result: settled.result,
      ...(settled.error === undefined ? {} : { error: settled.error }),
      startedAt: new Date(startedAt).toISOString(),
      endedAt: new Date(endedAt).toISOString(),
      ...answer,
    } satisfies RunResultFile)
    medium.writeReadme(renderOutputsReadme(view))
    await medium.settled()
    const runCost = (runView ?? view).cost
    return {
      runId,
      executionId,
      runDir: medium.runDir,
      executionDir: medium.executionDir,
      journalLocation: medium.journalLocation,
      disposition: settled.disposition,
      ok,
      result: settled.result,
      ...(settled.error === undefined ? {} : { error: settled.error }),
      ...(run.replay === undefined ? {} : { replay: run.replay.report() }),
      ...(runCost === undefined ? {} : { cost: { ...runCost } }),
    }
  }

  return {
    runId,
    runDir: medium.runDir,
    cancel: (reason?: string, by?: string) => {
      abortAs(controller, reason ?? 'cancelled by the host', by)
    },
    flush: () => { medium.flush() },
    resolveDeferred: (deferredId, result, decider) => run.deferrals.answer(deferredId, { kind: 'resolved', result: safeJson(result), ...deciderFields(decider) }),
    rejectDeferred: (deferredId, error, decider) =>
      run.deferrals.answer(deferredId, {
        kind: 'rejected',
        error: error.error,
        retryable: error.retryable === true,
        ...(error.code === undefined ? {} : { code: error.code }),
        ...deciderFields(decider),
      }),
    pendingDeferrals: () => run.deferrals.pending(),
    lookForUpdates: () => {
      void run.updates.look()
    },
    lookForSignals: () => {
      void run.signals.look()
    },
    view: () => runView ?? view,
    // Reached through options.suspendSignal (launchRun's); a child is suspended with its root.
    suspend: () => undefined,
    waitingOnly: () => run.activity.waitingOnly,
    done,
  }
}

/**
 * The medium, muted once the run is suspended: lines and artifacts written
 * after that are dropped, as if the process had stopped there, so a resume
 * sees the calls in flight as unfinished and runs them again.
 */
function mutedOnSuspend(medium: ExecutionMedium, suspension: { readonly suspended: boolean }): ExecutionMedium {
  return {
    runDir: medium.runDir,
    executionDir: medium.executionDir,
    journalLocation: medium.journalLocation,
    deferredAnswers: medium.deferredAnswers,
    beforeDispatch: medium.beforeDispatch,
    streams: medium.streams,
    append: (line) => (suspension.suspended ? ({ ...line, seq: -1, ts: new Date().toISOString() } as unknown as JournalLine) : medium.append(line)),
    flush: () => {
      medium.flush()
    },
    close: () => {
      medium.close()
    },
    prepareCall(callId) {
      if (suspension.suspended) return { artifacts: { write: () => undefined }, envelopePaths: { transcriptDir: '', resultDir: '' }, writeTranscript: () => undefined, writeEnvelope: () => undefined }
      const outputs = medium.prepareCall(callId)
      return {
        artifacts: {
          write: (name, text) => {
            if (!suspension.suspended) outputs.artifacts.write(name, text)
          },
        },
        envelopePaths: outputs.envelopePaths,
        writeTranscript: (json) => {
          if (!suspension.suspended) outputs.writeTranscript(json)
        },
        writeEnvelope: (json) => {
          if (!suspension.suspended) outputs.writeEnvelope(json)
        },
      }
    },
    writeResult: (value) => {
      if (!suspension.suspended) medium.writeResult(value)
    },
    writeReadme: (markdown) => {
      if (!suspension.suspended) medium.writeReadme(markdown)
    },
    settled: () => medium.settled(),
  }
}

function workflowMap(workflows: RunOptions['workflows']): ReadonlyMap<string, WorkflowDefinition> {
  if (workflows === undefined) return new Map()
  if (workflows instanceof Map) return workflows
  return new Map((workflows as readonly WorkflowDefinition[]).map((workflow) => [workflow.name, workflow]))
}

/**
 * Runs one spawn attempt: a child run of the same stored run in its own
 * execution, started by this process under the root's ownership, sharing
 * the root's host, cap, deadline, retry budget and deferrals. Its lines go to
 * its own journal only.
 */
async function runChild(
  parent: RunState,
  options: RunOptions,
  claimed: { readonly runId: string; readonly openChildMedium: OpenChildMedium; readonly clock: NonNullable<RunOptions['clock']> },
  request: ChildSpawnRequest,
): Promise<RunResultOfChild> {
  const openMedium = await claimed.openChildMedium(request.childExecutionId)
  // What the child's run_start records: the root's host and bounds, which the child runs under (from the parent's state, not these options).
  const rootBounds = {
    ...(parent.deadlineMs === undefined ? {} : { deadlineMs: parent.deadlineMs }),
    ...(parent.maxInvocations === undefined ? {} : { maxTotalAgentInvocations: parent.maxInvocations }),
  }
  const childOptions: RunOptions = {
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(options.durability === undefined ? {} : { durability: options.durability }),
    ...(parent.host === undefined ? {} : { host: parent.host }),
    ...(Object.keys(rootBounds).length === 0 ? {} : { budgets: rootBounds }),
    signal: request.signal,
  }
  const handle = startExecution(request.definition, request.input, childOptions, { parent: { run: parent, childCallId: request.childCallId } }, {
    runId: claimed.runId,
    executionId: request.childExecutionId,
    openMedium,
    openChildMedium: claimed.openChildMedium,
    clock: claimed.clock,
    ownership: undefined,
  })
  const result = await handle.done
  return {
    disposition: result.disposition,
    result: result.result,
    ...(result.error === undefined ? {} : { error: result.error }),
    ...(result.cost === undefined ? {} : { cost: result.cost }),
  }
}

function safeJson(value: unknown): JsonValue {
  try {
    return prepareWorkflowResult(value)
  } catch (error) {
    return { unserializable: error instanceof Error ? error.message : String(error) }
  }
}

