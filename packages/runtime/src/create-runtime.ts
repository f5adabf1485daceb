import { setMaxListeners } from 'node:events'
import { type DeferredAnswer, type DeferredAnswerOutcome, deciderFields, keepDeferredAnswer } from './deferrals.js'
import { type DeferredSettledLine, type JournalLine, type OnTimeoutPolicyJson, type RunView, type UpdateCompletedLine, type UpdateFailedLine, createRunView } from '@locus/journal'
import { type ListRunRowsFilter, type RunRowPage, type RunStore, createFileRunStore } from '@locus/store'
import type { WorkflowDefinition } from './define.js'
import { RuntimeInputError } from './errors.js'
import { describeZodIssues } from './zod-issues.js'
import { type SignalOutcome, checkSignal, keepSignal } from './signals.js'
import { type UpdateOutcome, auditRejectedUpdate, checkUpdate, keepUpdate } from './updates.js'
import { randomUUID } from 'node:crypto'
import type { SignalVia } from '@locus/journal'
import { type JsonValue, prepareWorkflowResult } from '@locus/outcome'
import type { ZodType } from 'zod'
import type { AgentHost } from './host.js'
import { type FeedCursor, type FeedHooks, type LineListener, createLineFeed } from './line-feed.js'
import { type ReadStoredRunOptions, type StoredRun, createEndedRunCache, heldStoredRun, readStoredRun } from './read-run.js'
import { type RunDescription, describeFromView, describeStoredRun } from './describe-run.js'
import { readRunStarts, recordedStart } from './recorded-options.js'
import { startReplay, startResume } from './resume-run.js'
import { abortAs, forwardRequester } from './cancel-requests.js'
import type { RunOptions } from './run-options.js'
import type { RunBudgets } from './budgets.js'
import { type ExecutionHandle, type RunResult, launchRun, parseWorkflowInput, resolveRunsDir } from './run-workflow-script.js'
import type { DeferredDecider } from './deferrals.js'
import { type ConcurrencyLimiter, type QueueSnapshot, checkPriority, createConcurrencyLimiter, resolveFlowKeys } from './flow-control.js'
import { type RateLimit, type RateLimiter, createRateLimiter, hostRateLimiter, rateQueues } from './rate-limits.js'

/** How a started, resumed or replayed execution is reached: one shape for all three. */
export interface RunHandle {
  readonly runId: string
  readonly executionId: string
  /**
   * Host cancellation: started work settles, new work stops, the execution
   * ends `cancelled`. The first request is journaled as
   * `run_cancel_requested { reason, by }`; `by` says who asked (an API key's
   * name, `cli`...; `host` when not given).
   */
  cancel(reason?: string, by?: string): void
  /** Makes every journal line written so far durable and readable now (it matters with durability `none`). */
  flush(): void
  /** The execution's end, with the same facts as its `run_end` line. */
  readonly done: Promise<RunResult>
  /**
   * Calls `listener` with every journal line after `afterSeq` (the whole
   * journal by default), then with each new line as it is written, in `seq`
   * order, with no gap and no duplicate, however late it joins. `hooks` say
   * when the listener is live (every stored line delivered), when the
   * execution ended with every line delivered, and when reading history
   * failed: enough to push lines to a client without a pull loop.
   */
  subscribe(listener: LineListener, cursor?: FeedCursor, hooks?: FeedHooks): () => void
  /** The same as an async iterable that ends after `run_end` (or when the loop breaks). */
  events(cursor?: FeedCursor): AsyncIterable<JournalLine>
  /** Answers an open deferral of this execution in this process; undefined when the execution cannot be reached that way. */
  answerDeferred(deferredId: string, answer: DeferredAnswer): DeferredAnswerOutcome | undefined
  /**
   * Answers an open deferral with the tool's result (checked against its
   * output schema; an invalid result leaves it open). `decider` names who
   * decided and how, for the `deferred_settled` line. `unknown` when this
   * process does not run the execution.
   */
  resolveDeferred(deferredId: string, result: unknown, decider?: DeferredDecider): DeferredAnswerOutcome
  /** Answers an open deferral with a tool error: terminal unless `retryable`. */
  rejectDeferred(deferredId: string, error: { readonly error: string; readonly retryable?: boolean; readonly code?: string }, decider?: DeferredDecider): DeferredAnswerOutcome
  /** The ids of the deferrals this execution waits on now, oldest first. */
  pendingDeferrals(): string[]
  /**
   * Suspends the execution without ending the run: calls in flight are
   * abandoned as on cancel (one whose terminal line was not written runs
   * again, as a new attempt, on resume), one `log` line records `reason`, and
   * no `run_end`, result or README is written. `done` resolves with
   * `suspended: true`; `resume(runId)` continues the run, waiting again on
   * its open deferrals. A no-op once the script settled or the run was
   * cancelled, and for an execution this process does not run.
   */
  suspend(reason?: string): void
  /** True while at least one call is in flight and every call in flight is a deferred tool waiting for its answer. */
  waitingOnly(): boolean
  /**
   * The execution's live fold, kept as its lines are written (for a resume,
   * with the run's earlier executions folded first), read without touching
   * the store. `undefined` when this process does not run the execution (a
   * run queued for a worker) or before it exists.
   */
  view(): RunView | undefined
  /** Calls `listener` each time {@link RunHandle.waitingOnly} changes; returns the unsubscribe function. */
  onWaitingChange(listener: (waitingOnly: boolean) => void): () => void
}

/** A deferral waiting for an answer, as a stored run's journal shows it. */
export interface PendingDeferral {
  readonly deferredId: string
  readonly tool: string
  readonly args?: unknown
  /** Its deadline, ISO 8601, or null to wait as long as it takes. */
  readonly expiresAt: string | null
  /** What the deadline does (the tool's `onTimeout`); absent when it fails the attempt as a timeout. */
  readonly onTimeout?: OnTimeoutPolicyJson
  /** The party an escalation is for. */
  readonly to?: string
  /** The deferral whose deadline opened this one (an escalation). */
  readonly escalatedFrom?: string
  readonly executionId: string
  /** When it opened (its `deferred_open` line's time), ISO 8601. */
  readonly openedAt?: string
}

interface Started {
  readonly done: Promise<RunResult>
  readonly flush?: () => void
  readonly answer?: (deferredId: string, answer: DeferredAnswer) => DeferredAnswerOutcome | undefined
  /** The execution in this process, once it exists: its live fold and open deferrals, for `describe`. */
  readonly execution?: () => ExecutionHandle | undefined
}

/** An answer handed to the execution that waits for it. */
function answerOn(handle: ExecutionHandle, deferredId: string, answer: DeferredAnswer): DeferredAnswerOutcome {
  return answer.kind === 'resolved'
    ? handle.resolveDeferred(deferredId, answer.result, deciderFields(answer))
    : handle.rejectDeferred(deferredId, { error: answer.error, retryable: answer.retryable, ...(answer.code === undefined ? {} : { code: answer.code }) }, deciderFields(answer))
}

/** What a resume or replay gives its launch before its execution exists: flush and answers reach it once it does. */
function startedLater(starting: Promise<{ readonly handle: ExecutionHandle; readonly done: Promise<RunResult> }>): Started {
  let handle: ExecutionHandle | undefined
  const done = starting.then((started) => {
    handle = started.handle
    return started.done
  })
  return {
    done,
    flush: () => {
      handle?.flush()
    },
    answer: (deferredId, answer) => (handle === undefined ? undefined : answerOn(handle, deferredId, answer)),
    execution: () => handle,
  }
}

/** What a launch gives the execution it begins. */
interface LaunchHooks {
  readonly signal: AbortSignal
  readonly suspendSignal: AbortSignal
  readonly onWaitingChange: (waitingOnly: boolean) => void
  readonly onEvent: (line: JournalLine) => void
}

/** What {@link createRuntime} needs. */
export interface RuntimeOptions {
  /** The workflows this runtime runs, by their names. */
  readonly workflows: readonly WorkflowDefinition[] | Readonly<Record<string, WorkflowDefinition>>
  /** Where `agent()` calls run. */
  readonly host?: AgentHost | undefined
  /** Where runs are stored. @default the file store in `<cwd>/.locus-pi/runs` */
  readonly runsDir?: string | undefined
  /**
   * Where runs are kept instead of a runs directory (`createMemoryRunStore()`,
   * a PostgreSQL store): runs start in it, and `resume` and `replay` read their
   * recordings from it and write their executions to it. A store has no
   * ownership lock: resume one run from one process at a time.
   */
  readonly store?: RunStore | undefined
  /**
   * How the workflows' `concurrency` limits are kept: by an in-process
   * limiter shared by every run this runtime starts (the default), or by
   * someone else (`'none'`: a PostgreSQL worker admits runs itself). Pass a
   * limiter to share one between runtimes of one process.
   * @default 'in-process'
   */
  readonly flowControl?: 'in-process' | 'none' | ConcurrencyLimiter | undefined
  /**
   * Shared rate limits on every LLM call of the runs this runtime executes:
   * `[{ match: { provider?, model? }, requestsPerMinute?, tokensPerMinute? }]`.
   * A limit with neither number, or one that is not a positive whole number,
   * is refused here (`RUN_OPTIONS_INVALID`). The limiter reads the clock of
   * `defaults.clock`. @default none
   */
  readonly rateLimits?: readonly RateLimit[] | undefined
  /** A limiter to share between runtimes of one process instead of one built from `rateLimits`. */
  readonly rateLimiter?: RateLimiter | undefined
  /** Options every run starts with; each call's options override them. */
  readonly defaults?: Omit<RunOptions, 'input' | 'runId' | 'signal' | 'onEvent' | 'host' | 'runsDir' | 'suspendSignal' | 'onWaitingChange'> | undefined
}

/**
 * Options of one start, resume or replay. `signal` cancels the execution as
 * `handle.cancel` does (from before its handle exists, as a CLI's Ctrl-C
 * may); `onEvent` sees every line as it is written, in order, before the
 * execution's end resolves (`handle.subscribe` is the same feed for a
 * listener that joins later).
 */
export type RuntimeRunOptions = Omit<RunOptions, 'runsDir' | 'cwd' | 'store'>

/** What the launch keeps for the caller rather than the execution: its cancel and suspend signals and its listeners. */
type CallerHooks = Pick<RunOptions, 'signal' | 'onEvent' | 'suspendSignal' | 'onWaitingChange'>

/** The part of a run's options the launch keeps for the caller. */
function callerOf(runOptions: RuntimeRunOptions | undefined): CallerHooks {
  const { signal, onEvent, suspendSignal, onWaitingChange } = runOptions ?? {}
  return {
    ...(signal === undefined ? {} : { signal }),
    ...(onEvent === undefined ? {} : { onEvent }),
    ...(suspendSignal === undefined ? {} : { suspendSignal }),
    ...(onWaitingChange === undefined ? {} : { onWaitingChange }),
  }
}

/** A deferral's answer outcome when the execution is not in this process (or not yet started). */
const NOT_HERE: DeferredAnswerOutcome = { ok: false, status: 'unknown', message: 'the execution is not running in this process' }

/** A runtime: one way in for every run, whoever starts it (code, CLI, server, MCP). */
export interface Runtime {
  /** The store runs are read from. */
  readonly store: RunStore
  /** The workflows by name. */
  readonly workflows: ReadonlyMap<string, WorkflowDefinition>
  /**
   * Starts a workflow (a definition, or the name of a registered one). It
   * resolves once the run exists: a bad input, a taken run id or an unknown
   * workflow rejects, and nothing is written.
   */
  start(workflow: WorkflowDefinition | string, options?: RuntimeRunOptions): Promise<RunHandle>
  /** Continues a stored run in a new execution; completed calls are served from the journal. Rejects with `RUN_OWNED` while a live process owns it. */
  resume(runId: string, options?: RuntimeRunOptions & { readonly workflow?: WorkflowDefinition | string }): Promise<RunHandle>
  /** Re-runs a stored run from its recording with no host: the determinism check. */
  replay(runId: string, options?: Omit<RuntimeRunOptions, 'host'> & { readonly workflow?: WorkflowDefinition | string }): Promise<RunHandle>
  /** A stored run, folded: each execution's RunView, result file and summary. */
  get(runId: string, options?: ReadStoredRunOptions): Promise<StoredRun>
  /**
   * How a run stands: status, ending, the one `ok`, figures, what it waits on.
   * From the live fold, without a store read, while this runtime executes the
   * run; from the store otherwise.
   *
   * @throws RunNotFoundError (`RUN_NOT_FOUND`) for a run the store does not have
   */
  describe(runId: string): Promise<RunDescription>
  /**
   * The run as {@link Runtime.get} shows it, from the live fold of the
   * execution this process runs for it, with no store read: while that
   * execution is the run's root, has not ended and has spawned no child.
   * `undefined` otherwise (read the store with `get`).
   */
  held(runId: string): StoredRun | undefined
  /**
   * A page of stored runs' summary rows, newest first, filtered by workflow,
   * status and creation time; `nextCursor` names the next page. Reads rows
   * only (the store keeps them from the journal), never a journal line.
   */
  list(filter?: ListRunRowsFilter): Promise<RunRowPage>
  /** Cancels the live execution of a run started or resumed by this runtime, journaling who asked (`by`); false when it has none. */
  cancel(runId: string, reason?: string, by?: string): boolean
  /**
   * Asks whoever executes the run, on any machine, to cancel it; true when
   * the request was recorded for a run still going. Only runtimes whose runs
   * execute elsewhere (a PostgreSQL dispatcher) have it.
   */
  requestCancel?(runId: string, reason?: string, by?: string): Promise<boolean>
  /** The live handle of a run this runtime is executing (its root or a resume), if any; a replay, which only checks the run, is never it. */
  live(runId: string): RunHandle | undefined
  /** The deferrals of a stored run that wait for an answer. */
  pendingDeferrals(runId: string): Promise<PendingDeferral[]>
  /**
   * Answers a deferral of a run: in this process when this runtime executes
   * it (a result is checked against the tool's output schema), else kept by
   * the store for the process that executes the run (on any machine: it looks
   * there while it waits), or for the next `resume`.
   */
  answerDeferred(runId: string, deferredId: string, answer: DeferredAnswer): Promise<DeferredAnswerOutcome>
  /**
   * Sends signal `name` to a run: checked against the workflow's declared
   * signals (an undeclared name is `unknown`, naming the declared ones; a
   * payload failing its schema is `invalid`; a finished run is `finished`,
   * and nothing is written then), then kept in the run's mailbox in the
   * store, where the process executing the run reads and journals it (a
   * parked PostgreSQL run is queued again).
   */
  signal(runId: string, name: string, payload: unknown, sender?: { readonly from?: string; readonly via?: SignalVia }): Promise<SignalOutcome>
  /**
   * Sends update `name` to a run and waits for its handler: checked against
   * the workflow's declared updates (an undeclared name is `unknown`, naming
   * the declared ones; a finished run is `finished`), then its input schema
   * (`invalid`) and `validate` (`rejected`): a refused update writes nothing
   * to the journal and is kept as an audit record ({@link rejectedUpdatesOf}).
   * An accepted one is kept in the run's update mailbox, journaled by the
   * process executing the run as `update_received`, run by its `onUpdate`
   * handler and journaled `update_completed` (answered `completed` with its
   * result) or `update_failed` (`failed`). When `waitMs` (default 30 s) runs
   * out first the answer is `accepted` with the `updateId`.
   */
  update(runId: string, name: string, input: unknown, sender?: { readonly from?: string; readonly via?: SignalVia }, options?: UpdateWaitOptions): Promise<UpdateOutcome>
  /** Answers query `name` of a run from its journal fold alone, whoever holds it; undefined `result` is null. */
  query(runId: string, name: string): Promise<QueryOutcome>
  /** Per concurrency key: runs holding a slot, runs waiting to start, and the oldest wait (`GET /v1/queues`, `locus queues`). */
  queues?(): Promise<QueueSnapshot[]>
}

/** How long `update()` waits for the handler. */
export interface UpdateWaitOptions {
  /** Milliseconds to wait for the handler's end before answering `accepted`. @default 30000 */
  readonly waitMs?: number
  /** Stops the wait early (the update stays kept, and runs). */
  readonly signal?: AbortSignal
}

/** What a query answered. */
export type QueryOutcome =
  | { readonly ok: true; readonly result: JsonValue }
  | { readonly ok: false; readonly status: 'unknown'; readonly message: string; readonly declared: readonly string[] }

/** The limiter reads the runs' clock when one is injected (waits then measure on it), else its own. */
function clockNow(clock: { now(): number } | undefined): { now?: () => number } {
  return clock === undefined ? {} : { now: () => clock.now() }
}

function toMap(workflows: RuntimeOptions['workflows']): Map<string, WorkflowDefinition> {
  const list = Array.isArray(workflows) ? (workflows as readonly WorkflowDefinition[]) : Object.values(workflows as Record<string, WorkflowDefinition>)
  const map = new Map<string, WorkflowDefinition>()
  for (const workflow of list) {
    if (map.has(workflow.name)) {
      throw new RuntimeInputError('RUN_OPTIONS_INVALID', `Two workflows are named "${workflow.name}"; give each a unique name.`, [`workflows: "${workflow.name}" twice`])
    }
    map.set(workflow.name, workflow)
  }
  return map
}

/**
 * Creates a runtime over a store: `start`, `resume` and `replay` return one
 * kind of {@link RunHandle}, `get` and `list` read stored runs, and `cancel`
 * reaches any run this runtime is executing.
 *
 * @example
 * ```ts
 * const runtime = createRuntime({ workflows: [triage], host })
 * const run = await runtime.start('triage', { input: { ticket: 'T-1' } })
 * for await (const line of run.events()) console.log(line.seq, line.type)
 * ```
 */
export function createRuntime(options: RuntimeOptions): Runtime {
  const workflows = toMap(options.workflows)
  const runsDir = resolveRunsDir(options.runsDir === undefined ? {} : { runsDir: options.runsDir })
  const store = options.store ?? createFileRunStore(runsDir)
  const liveRuns = new Map<string, RunHandle>()
  // A finished run is read once, then served from its fold while the store lists the same executions.
  const readFinished = createEndedRunCache(store)
  // What describe reads of a live run: its execution in this process (never the store).
  const executions = new WeakMap<RunHandle, Started>()

  /**
   * Waits for update `updateId`'s end line: from the live fold and line feed
   * of an execution in this process (asked to read its mailbox at once), else
   * from the store, looked at every 20 ms. `ended` when the run ended first;
   * undefined when `waitMs` ran out or `signal` aborted.
   */
  async function awaitUpdateEnd(runId: string, updateId: string, waitMs: number, signal: AbortSignal | undefined): Promise<UpdateCompletedLine | UpdateFailedLine | 'ended' | undefined> {
    const deadline = Date.now() + waitMs
    for (let first = true; ; first = false) {
      const handle = liveRuns.get(runId)
      const execution = handle === undefined ? undefined : executions.get(handle)?.execution?.()
      if (handle !== undefined && execution !== undefined) {
        if (first) execution.lookForUpdates()
        const found = await new Promise<UpdateCompletedLine | UpdateFailedLine | 'ended' | undefined>((resolve) => {
          let stop = (): void => undefined
          const timer = setTimeout(() => {
            finish(undefined)
          }, Math.max(0, deadline - Date.now()))
          const onAbort = (): void => {
            finish(undefined)
          }
          function finish(value: UpdateCompletedLine | UpdateFailedLine | 'ended' | undefined): void {
            clearTimeout(timer)
            signal?.removeEventListener('abort', onAbort)
            queueMicrotask(() => {
              stop()
            })
            resolve(value)
          }
          if (signal?.aborted === true) finish(undefined)
          signal?.addEventListener('abort', onAbort, { once: true })
          const earlier = execution.view()?.updateEnds().get(updateId)
          if (earlier !== undefined) finish(earlier)
          // A suspended execution writes no run_end: its end sends the wait to the store (and to a resume).
          void handle.done.then(
            () => {
              finish('ended')
            },
            () => {
              finish('ended')
            },
          )
          stop = handle.subscribe((line) => {
            if ((line.type === 'update_completed' || line.type === 'update_failed') && line.updateId === updateId) finish(line)
            else if (line.type === 'run_end' && line.executionId === handle.executionId) finish('ended')
          })
        })
        // The execution ended or was suspended: the store tells whether the update ended meanwhile.
        if (found !== 'ended') return found
      }
      const { view } = await readStoredRun(store, runId)
      const end = view.updateEnds().get(updateId)
      if (end !== undefined) return end
      if (view.runEnd !== undefined) return 'ended'
      const left = deadline - Date.now()
      if (left <= 0 || signal?.aborted === true) return undefined
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 20))
        signal?.addEventListener(
          'abort',
          () => {
            clearTimeout(timer)
            resolve()
          },
          { once: true },
        )
      })
    }
  }
  const limiter: ConcurrencyLimiter | undefined =
    options.flowControl === 'none' ? undefined : options.flowControl === undefined || options.flowControl === 'in-process' ? createConcurrencyLimiter(clockNow(options.defaults?.clock)) : options.flowControl
  const rateLimiter: RateLimiter | undefined =
    options.rateLimiter ??
    (options.rateLimits === undefined
      ? // The host's own limits, checked here (a bad one refuses the runtime) and shared by every runtime using that host.
        hostRateLimiter(options.host, options.defaults?.clock)
      : createRateLimiter({ limits: options.rateLimits, clock: options.defaults?.clock }))

  function workflowOf(workflow: WorkflowDefinition | string | undefined, fallbackName?: string): WorkflowDefinition {
    if (workflow !== undefined && typeof workflow !== 'string') return workflow
    const name = workflow ?? fallbackName
    const found = name === undefined ? undefined : workflows.get(name)
    if (found === undefined) {
      throw new RuntimeInputError(
        'RUN_OPTIONS_INVALID',
        `No workflow named "${name ?? '(none)'}" in this runtime. Registered: ${[...workflows.keys()].join(', ') || '(none)'}.`,
        [`workflow: "${name ?? ''}" is not registered`],
      )
    }
    return found
  }

  /**
   * Wraps one execution: its lines go to a feed that late subscribers read
   * from the store first; the handle resolves when the execution's first line
   * (`run_start`) names it, or rejects when the launch is refused.
   */
  function launch(runId: string | undefined, begin: (hooks: LaunchHooks) => Started, caller: CallerHooks = {}, as: 'run' | 'replay' = 'run'): Promise<RunHandle> {
    const controller = new AbortController()
    setMaxListeners(0, controller.signal)
    // The caller's own signal cancels the execution as handle.cancel does, who asked included (a CLI's Ctrl-C before the handle exists).
    const outer = caller.signal
    const cancelFromCaller = (): void => {
      if (outer === undefined) return
      forwardRequester(outer, controller.signal)
      controller.abort(outer.reason)
    }
    if (outer?.aborted === true) cancelFromCaller()
    else outer?.addEventListener('abort', cancelFromCaller, { once: true })
    const suspender = new AbortController()
    // The caller's suspend signal suspends as handle.suspend does, from before the handle exists too.
    const suspendFromCaller = (): void => {
      suspender.abort(caller.suspendSignal?.reason ?? 'suspended by the host')
    }
    if (caller.suspendSignal?.aborted === true) suspendFromCaller()
    else caller.suspendSignal?.addEventListener('abort', suspendFromCaller, { once: true })
    let waitingOnly = false
    const waitingListeners = new Set<(waitingOnly: boolean) => void>(caller.onWaitingChange === undefined ? [] : [caller.onWaitingChange])
    const onWaitingChange = (now: boolean): void => {
      waitingOnly = now
      for (const listener of [...waitingListeners]) listener(now)
    }
    let executionId: string | undefined
    let knownRunId = runId
    let flushNow: (() => void) | undefined
    const feed = createLineFeed({
      flush: () => {
        flushNow?.()
        return Promise.resolve()
      },
      readHistory: (afterSeq) => store.readLines({ runId: knownRunId ?? '', executionId: executionId ?? '' }, { afterSeq }),
    })
    return new Promise<RunHandle>((resolve, reject) => {
      let settled = false
      let started: Started | undefined
      function ready(): void {
        if (settled) return
        settled = true
        const handle = handleOf()
        // A replay checks the run; it does not execute it: `live(runId)`, `describe` and answers keep to the run's own execution.
        if (as === 'run') liveRuns.set(handle.runId, handle)
        if (started !== undefined) executions.set(handle, started)
        resolve(handle)
      }
      const handleOf = (): RunHandle => ({
        runId: knownRunId ?? '',
        executionId: executionId ?? '',
        cancel: (reason, by) => {
          abortAs(controller, reason ?? 'cancelled by the host', by)
        },
        flush: () => flushNow?.(),
        answerDeferred: (deferredId, answer) => started?.answer?.(deferredId, answer),
        resolveDeferred: (deferredId, result, decider) => started?.execution?.()?.resolveDeferred(deferredId, result, decider) ?? NOT_HERE,
        rejectDeferred: (deferredId, error, decider) => started?.execution?.()?.rejectDeferred(deferredId, error, decider) ?? NOT_HERE,
        pendingDeferrals: () => started?.execution?.()?.pendingDeferrals() ?? [],
        suspend: (reason) => {
          suspender.abort(reason ?? 'suspended by the host')
        },
        waitingOnly: () => waitingOnly,
        view: () => started?.execution?.()?.view(),
        onWaitingChange: (listener) => {
          waitingListeners.add(listener)
          return () => {
            waitingListeners.delete(listener)
          }
        },
        done: (started as { done: Promise<RunResult> }).done,
        subscribe: (listener, cursor, hooks) => feed.subscribe(listener, cursor, hooks),
        events: (cursor) => feed.events(cursor),
      })
      const onEvent = (line: JournalLine): void => {
        if (!settled && line.type === 'run_start') {
          knownRunId = line.runId
          executionId = line.executionId
          // The first line names the execution; before it the launch may still be refused.
          if (started !== undefined) ready()
        }
        feed.publish(line)
        // The caller's listener sees each line as it is written, in order, before the execution's end resolves.
        caller.onEvent?.(line)
      }
      try {
        started = begin({ signal: controller.signal, suspendSignal: suspender.signal, onWaitingChange, onEvent })
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)))
        return
      }
      flushNow = started.flush
      if (executionId !== undefined) ready()
      void started.done
        .finally(() => {
          outer?.removeEventListener('abort', cancelFromCaller)
          caller.suspendSignal?.removeEventListener('abort', suspendFromCaller)
        })
        .catch(() => undefined)
      started.done.then(
        (result) => {
          knownRunId ??= result.runId
          executionId ??= result.executionId
          ready()
          feed.end()
          if (liveRuns.get(result.runId)?.executionId === result.executionId) liveRuns.delete(result.runId)
        },
        (error: unknown) => {
          feed.end()
          if (!settled) {
            settled = true
            reject(error instanceof Error ? error : new Error(String(error)))
          }
        },
      )
    })
  }

  /** A run's budgets over the runtime's defaults, field by field (`perCall` too): a run that sets a deadline keeps the default money budget. */
  const budgetsOver = (defaults: RunBudgets | undefined, own: RunBudgets | undefined): { budgets?: RunBudgets } => {
    if (defaults === undefined || own === undefined) return {}
    const perCall = defaults.perCall === undefined || own.perCall === undefined ? (own.perCall ?? defaults.perCall) : { ...defaults.perCall, ...own.perCall }
    return { budgets: { ...defaults, ...own, ...(perCall === undefined ? {} : { perCall }) } }
  }

  const base = (runOptions: RuntimeRunOptions | undefined, hooks: LaunchHooks): RunOptions => ({
    ...options.defaults,
    ...(options.host === undefined ? {} : { host: options.host }),
    ...(rateLimiter === undefined ? {} : { rateLimiter }),
    // Scripts may spawn the runtime's workflows by name.
    ...(workflows.size === 0 ? {} : { workflows }),
    ...runOptions,
    ...budgetsOver(options.defaults?.budgets, runOptions?.budgets),
    // One store for every run of this runtime: the file store over runsDir unless another was given.
    store,
    signal: hooks.signal,
    suspendSignal: hooks.suspendSignal,
    onWaitingChange: hooks.onWaitingChange,
    onEvent: hooks.onEvent,
  })

  /** The live fold of a run this process holds when that fold is the whole run: one root execution, running or waiting, with no child. */
  function heldView(runId: string): { readonly view: RunView; readonly runDir: string } | undefined {
    const handle = liveRuns.get(runId)
    const execution = handle === undefined ? undefined : executions.get(handle)?.execution?.()
    const view = execution?.view()
    // Anything else (a resume, a child, an ended run) reads the store.
    if (handle === undefined || execution === undefined || view === undefined || handle.executionId !== runId) return undefined
    if (view.runStart === undefined || view.runEnd !== undefined || view.executions().length !== 1 || view.children().length > 0) return undefined
    return { view, runDir: execution.runDir }
  }

  /** The stored form of a run this process holds whose own fold is the whole run (see `Runtime.held`). */
  function heldRun(runId: string): StoredRun | undefined {
    const held = heldView(runId)
    return held === undefined ? undefined : heldStoredRun({ runId, executionId: runId, kind: 'root', location: held.runDir }, held.view)
  }

  /** The deferrals of a stored run: those still open, and how the settled ones ended, as one fold of every execution's lines (children too) shows them. */
  async function deferralsOf(runId: string): Promise<{ open: Map<string, PendingDeferral>; settled: ReadonlyMap<string, DeferredSettledLine>; workflowOf: Map<string, string> }> {
    const view = createRunView({ keep: 'notable' })
    // Each execution's workflow (a child's differs from its root's), so an answer can be checked against its tool.
    const workflowOf = new Map<string, string>()
    for (const info of await store.listExecutions(runId)) {
      for await (const line of store.readLines(info)) {
        if (line.type === 'run_start') workflowOf.set(line.executionId, line.workflow)
        view.apply(line)
      }
    }
    return { open: new Map(view.openDeferrals().map((deferral) => [deferral.deferredId, deferral])), settled: view.deferralSettlements(), workflowOf }
  }

  return {
    store,
    workflows,
    async start(workflow, runOptions) {
      const definition = workflowOf(workflow)
      let slot: Awaited<ReturnType<ConcurrencyLimiter['acquire']>> | undefined
      if (limiter !== undefined && (definition.concurrency !== undefined || runOptions?.concurrencyKey !== undefined)) {
        // Keys come from the validated input; a bad input, a bad key or a bad priority refuses the start before anything is written.
        const keys = resolveFlowKeys(definition, parseWorkflowInput(definition, runOptions?.input), runOptions?.concurrencyKey)
        const priority = checkPriority(runOptions?.priority)
        if (keys.length > 0) slot = await limiter.acquire({ keys, priority })
      }
      const admitted = slot?.queued === undefined ? runOptions : { ...runOptions, queued: slot.queued }
      const launched = launch(runOptions?.runId, (hooks) => {
        const handle = launchRun(definition, base(admitted, hooks), {})
        // The slot is the execution's: it goes back when the execution ends, however it ends.
        if (slot !== undefined) void handle.done.finally(() => { slot.release(); }).catch(() => undefined)
        return {
          done: handle.done,
          flush: () => {
            handle.flush()
          },
          answer: (deferredId, answer) => answerOn(handle, deferredId, answer),
          execution: () => handle,
        }
      }, callerOf(runOptions))
      launched.catch(() => slot?.release())
      return launched
    },
    async resume(runId, resumeOptions) {
      // The first line of each execution says how the run started; resumeRun reads the rest once, for its recording.
      const starts = await readRunStarts(store, runId)
      const recorded = recordedStart(starts)
      const recordedName =
        resumeOptions?.workflow === undefined
          ? (starts.root.view.runStart?.workflow ?? starts.executions.find((execution) => execution.info.executionId === recorded.executionId)?.view.runStart?.workflow)
          : undefined
      const definition = workflowOf(resumeOptions?.workflow, recordedName)
      const { workflow: _workflow, ...rest } = resumeOptions ?? {}
      // The run's recorded budgets, scheduling and retry settings, under the ones given now.
      const options: RuntimeRunOptions = { ...recorded.options, ...(recorded.fallbackInput === undefined ? {} : { input: recorded.fallbackInput }), ...rest }
      // Completed runs are refused once the run is claimed (its lock, or a worker's lease).
      return launch(runId, (hooks) => startedLater(startResume(runId, definition, { ...base(options, hooks), refuseCompleted: rest.refuseCompleted ?? true })), callerOf(rest))
    },
    async replay(runId, replayOptions) {
      const recordedName = replayOptions?.workflow === undefined ? (await readRunStarts(store, runId)).root.view.runStart?.workflow : undefined
      const definition = workflowOf(replayOptions?.workflow, recordedName)
      const { workflow: _workflow, ...rest } = replayOptions ?? {}
      return launch(runId, (hooks) => {
        const { host: _host, ...withoutHost } = base(rest, hooks)
        return startedLater(startReplay(runId, definition, withoutHost).then((started) => ({ handle: started.handle, done: started.done.then((replayed) => replayed.run) })))
      }, callerOf(rest), 'replay')
    },
    get: (runId, readOptions) => ((readOptions?.keep ?? 'notable') === 'notable' ? readFinished(runId) : readStoredRun(store, runId, readOptions)),
    async describe(runId) {
      const handle = liveRuns.get(runId)
      const execution = handle === undefined ? undefined : executions.get(handle)?.execution?.()
      const view = execution?.view()
      if (handle !== undefined && execution !== undefined && view?.runStart !== undefined) {
        return describeFromView(view, {
          runId,
          executionId: handle.executionId,
          live: true,
          openStatus: handle.waitingOnly() ? 'waiting' : 'running',
          pendingDeferrals: execution.pendingDeferrals(),
        })
      }
      return describeStoredRun(store, runId, readFinished)
    },
    held: (runId) => heldRun(runId),
    list: (filter) => store.listRunRows(filter),
    cancel(runId, reason, by) {
      const handle = liveRuns.get(runId)
      if (handle === undefined) return false
      handle.cancel(reason, by)
      return true
    },
    live: (runId) => liveRuns.get(runId),
    queues: () => Promise.resolve([...(limiter?.snapshot() ?? []), ...rateQueues(rateLimiter)]),
    // A run this process holds (one root execution, running or waiting) answers from its live fold: no store read.
    pendingDeferrals: async (runId) => heldView(runId)?.view.openDeferrals() ?? [...(await deferralsOf(runId)).open.values()],
    async signal(runId, name, payload, sender) {
      const stored = await readStoredRun(store, runId)
      const view = stored.view
      const definition = workflows.get(view.workflow ?? '')
      const checked = checkSignal(definition?.signals, view.workflow ?? '(unknown)', name, payload)
      if (!checked.ok) return checked
      if (view.runEnd !== undefined) return { ok: false, status: 'finished', message: `Run "${runId}" has ended (${view.runEnd.disposition}); it takes no more signals.` }
      const signalSeq = await keepSignal(store, runId, { kind: 'signal', name, payload: checked.payload, from: sender?.from ?? 'host', via: sender?.via ?? 'host' }, view.signals().length)
      // An execution in this process reads it now, not at its next look at the mailbox.
      const handle = liveRuns.get(runId)
      if (handle !== undefined) executions.get(handle)?.execution?.()?.lookForSignals()
      return { ok: true, status: 'stored', signalSeq }
    },
    async update(runId, name, input, sender, options) {
      const { view } = await readStoredRun(store, runId)
      const workflow = view.workflow ?? '(unknown)'
      const declared = workflows.get(view.workflow ?? '')?.updates
      const from = sender?.from ?? 'host'
      const via = sender?.via ?? 'host'
      if (declared === undefined || !Object.hasOwn(declared, name)) {
        const names = Object.keys(declared ?? {})
        return { ok: false, status: 'unknown', declared: names, message: `Workflow "${workflow}" declares no update "${name}". Declared: ${names.join(', ') || '(none)'}.` }
      }
      if (view.runEnd !== undefined) return { ok: false, status: 'finished', message: `Run "${runId}" has ended (${view.runEnd.disposition}); it takes no more updates.` }
      const updateId = `upd_${randomUUID()}`
      const checked = checkUpdate(declared, workflow, name, input)
      if (!checked.ok) {
        if (checked.status === 'unknown') return checked
        await auditRejectedUpdate(store, runId, { kind: 'update_rejected', updateId, name, input: input ?? null, stage: checked.status === 'invalid' ? 'schema' : 'validate', issues: checked.issues, from, via, at: new Date().toISOString() })
        return checked.status === 'invalid' ? { ok: false, status: 'invalid', updateId, issues: checked.issues } : { ok: false, status: 'rejected', updateId, issues: checked.issues }
      }
      await keepUpdate(store, runId, { kind: 'update', updateId, name, input: checked.input, from, via }, view.updates().length)
      const end = await awaitUpdateEnd(runId, updateId, options?.waitMs ?? 30_000, options?.signal)
      if (end === 'ended') return { ok: false, status: 'finished', updateId, message: `Run "${runId}" ended before update ${updateId} completed.` }
      if (end === undefined) return { ok: true, status: 'accepted', updateId }
      return end.type === 'update_completed' ? { ok: true, status: 'completed', updateId, result: end.output } : { ok: false, status: 'failed', updateId, error: end.error }
    },
    async query(runId, name) {
      const { view } = await readStoredRun(store, runId)
      const queries = workflows.get(view.workflow ?? '')?.queries
      const declared = Object.keys(queries ?? {})
      const query = queries === undefined || !Object.hasOwn(queries, name) ? undefined : queries[name]
      if (query === undefined) return { ok: false, status: 'unknown', declared, message: `Workflow "${view.workflow ?? '(unknown)'}" declares no query "${name}". Declared: ${declared.join(', ') || '(none)'}.` }
      return { ok: true, result: prepareWorkflowResult(query(view) ?? null) }
    },
    async answerDeferred(runId, deferredId, answer) {
      const live = liveRuns.get(runId)?.answerDeferred(deferredId, answer)
      if (live !== undefined && live.status !== 'unknown') return live
      const { open, settled, workflowOf } = await deferralsOf(runId)
      const done = settled.get(deferredId)
      if (done !== undefined) {
        const same =
          answer.kind === 'resolved'
            ? done.outcome === 'resolved' && JSON.stringify(done.result) === JSON.stringify(answer.result)
            : done.outcome === 'rejected' && done.error?.error === answer.error
        return same
          ? { ok: true, status: 'already-answered' }
          : { ok: false, status: 'conflict', message: `Deferral ${deferredId} was already settled (${done.outcome}); an answer is final.` }
      }
      const pending = open.get(deferredId)
      if (pending === undefined) return { ok: false, status: 'unknown', message: `Run "${runId}" has no deferral ${deferredId}.` }
      // Checked here when this runtime knows the workflow: a kept answer is final, so a bad one must not be kept.
      const name = workflowOf.get(pending.executionId)
      const output = name === undefined ? undefined : (workflows.get(name)?.tools as Readonly<Record<string, { readonly output?: ZodType }>> | undefined)?.[pending.tool]?.output
      if (answer.kind === 'resolved' && output !== undefined) {
        const parsed = output.safeParse(answer.result)
        if (!parsed.success) return { ok: false, status: 'invalid', issues: describeZodIssues(parsed.error, 'result') }
      }
      return keepDeferredAnswer(store, runId, deferredId, answer)
    },
  }
}
