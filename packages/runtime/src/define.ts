import type { parallel, pipeline } from '@locus/groups'
import type { JsonValue, StepCriticality } from '@locus/outcome'
import type { RetryPolicy } from '@locus/retry'
import type { OnTimeoutPolicyJson, RunView, SignalVia } from '@locus/journal'
import type { z } from 'zod'
import type { AgentConfig, CallBudgets, Usage } from './host.js'
import { type ConcurrencyLimit, type DeadlineCounts, checkFlowDefinition } from './flow-control.js'
import { checkOnTimeout } from './on-timeout.js'

/** What a tool's `run` receives besides its arguments. */
export interface ToolCallContext {
  /** Aborted when the attempt's deadline passes or the run is cancelled. */
  readonly signal: AbortSignal
  readonly attempt: number
  readonly toolCallId: string
  readonly runId: string
}

/**
 * A tool a workflow offers to its script and to every agent it calls.
 * `TInput` is what `run` receives (the schema's output), `TArgs` what a
 * caller passes (the schema's input: fields with defaults may be left out).
 */
export interface ToolDefinition<TInput = unknown, TOutput = unknown, TArgs = TInput> {
  readonly description?: string
  readonly input: z.ZodType<TInput, TArgs>
  readonly run: (args: TInput, call: ToolCallContext) => TOutput | Promise<TOutput>
  /** The tool's own default retry policy; a call's `retry` overrides it. @default no retry, no timeout */
  readonly retry?: RetryPolicy
}

/**
 * Declares a tool: its zod input schema, its implementation and, optionally,
 * its default seed-001 retry policy.
 *
 * @example
 * ```ts
 * const lookup = defineTool({
 *   input: z.object({ id: z.string() }),
 *   retry: { timeout_secs: 5, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 30 },
 *   run: async ({ id }, { signal }) => fetchTicket(id, signal),
 * })
 * ```
 */
export function defineTool<TInput, TOutput = unknown, TArgs = TInput>(
  definition: DeferredToolDefinition<TInput, TOutput, TArgs> & { readonly deferred: true },
): ToolDefinition<TInput, TOutput, TArgs> & { readonly deferred: true }
export function defineTool<TInput, TOutput, TArgs = TInput>(definition: ToolDefinition<TInput, TOutput, TArgs>): ToolDefinition<TInput, TOutput, TArgs>
export function defineTool<TInput, TOutput, TArgs = TInput>(
  definition: ToolDefinition<TInput, TOutput, TArgs> | (DeferredToolDefinition<TInput, TOutput, TArgs> & { readonly deferred: true }),
): ToolDefinition<TInput, TOutput, TArgs> {
  // `defineTool({ deferred: true, output, onTimeout })` is `defineDeferredTool` under the spelling.
  if ((definition as { readonly deferred?: unknown }).deferred === true) return defineDeferredTool(definition as DeferredToolDefinition<TInput, TOutput, TArgs>)
  return definition as ToolDefinition<TInput, TOutput, TArgs>
}

/**
 * What a deferred tool does when its deadline (the call's `timeout_secs`)
 * passes with no answer:
 * - `'reject'`: the call fails (not retried: an expired approval is a no);
 * - `{ default: value }`: the call completes with `value`, checked against the
 *   tool's `output` when the tool is defined;
 * - `{ escalate: { to, after } }`: a new deferral opens for `to` (the first is
 *   settled as `escalated`), with `after` (a duration such as `'2h'`, or
 *   milliseconds) to answer; past that the call fails. Without `after` it
 *   waits as long as it takes.
 *
 * Without `onTimeout`, a deadline fails the attempt as a timeout, which the
 * call's retry policy may retry under a new deferral.
 */
export type OnTimeout<TOutput = unknown> =
  | 'reject'
  | { readonly default: TOutput }
  | { readonly escalate: { readonly to: string; readonly after?: string | number } }

/** What {@link defineDeferredTool} takes (and `defineTool` with `deferred: true`). */
export interface DeferredToolDefinition<TInput, TOutput = unknown, TArgs = TInput> {
  readonly description?: string
  readonly input: z.ZodType<TInput, TArgs>
  readonly output?: z.ZodType<TOutput>
  readonly retry?: RetryPolicy
  /** What the deadline does when no answer came. @default a timeout of the attempt */
  readonly onTimeout?: OnTimeout<NoInfer<TOutput>>
}

/** A tool as a workflow holds it, whatever its argument and result types. */
export interface DeclaredTool {
  readonly description?: string
  readonly input: z.ZodType
  readonly run: (args: never, call: ToolCallContext) => unknown
  readonly retry?: RetryPolicy
  /** True for a tool that lives with a worker: calls go out as `tool.execute` triggers through the run's `worker`. */
  readonly remote?: boolean
  /** True for a tool answered from outside the run (a person, another system): each call opens a deferral and waits. */
  readonly deferred?: boolean
  /** A deferred tool's policy at its deadline, as checked when it was defined (its default detached to JSON). */
  readonly onTimeout?: OnTimeoutPolicyJson
}

/**
 * Declares a deferred tool: calling it journals a `deferred_open` line and
 * waits, with no timeout unless its policy sets `timeout_secs`, until someone
 * answers it: `handle.resolveDeferred(id, result)` (checked against `output`;
 * an invalid result leaves it open) or `handle.rejectDeferred(id, error)`, or
 * `locus resolve <runId> <id> --result '<json>'` from another shell. A resumed
 * run waits on the same deferral under the same id. `onTimeout` says what
 * its deadline does ({@link OnTimeout}); a `default` that breaks `output`, or
 * a malformed policy, throws `DEFERRED_TOOL_INVALID` here.
 *
 * @example
 * ```ts
 * const approve = defineDeferredTool({
 *   input: z.object({ amount: z.number() }),
 *   output: z.object({ approved: z.boolean() }),
 *   retry: { timeout_secs: 3600, max_retries: 1, backoff_base_secs: 0, backoff_max_secs: 0 },
 *   onTimeout: { default: { approved: false } },
 * })
 * ```
 */
export function defineDeferredTool<TInput, TOutput = unknown, TArgs = TInput>(
  definition: DeferredToolDefinition<TInput, TOutput, TArgs>,
): ToolDefinition<TInput, TOutput, TArgs> & { readonly deferred: true } {
  // Checked here, where the author is: a default that breaks the output schema would only fail once a deadline passed.
  const onTimeout = definition.onTimeout === undefined ? undefined : checkOnTimeout(definition.onTimeout, definition.output)
  return {
    ...(definition.description === undefined ? {} : { description: definition.description }),
    input: definition.input,
    ...(definition.retry === undefined ? {} : { retry: definition.retry }),
    deferred: true,
    run: () => {
      throw new Error('a deferred tool is answered from outside the run; call it through tool()')
    },
    ...(definition.output === undefined ? {} : { output: definition.output }),
    ...(onTimeout === undefined ? {} : { onTimeout }),
  }
}

/** A tool that lives with a worker, in this process or another, in any language. */
export interface RemoteToolDefinition<TInput = unknown, TOutput = unknown, TArgs = TInput> extends ToolDefinition<TInput, TOutput, TArgs> {
  readonly remote: true
}

/**
 * Declares a tool whose implementation lives with a worker: calling it sends
 * a seed-001 `tool.execute` trigger (with the attempt's `deadline`) through
 * the run's `worker` transport and settles on the worker's `tool.result` or
 * `tool.error`. Retries follow the call's or the tool's policy as for any
 * tool: only a `tool.error` with `retryable: true` retries, a lapsed deadline
 * always does. `output`, when given, checks what the worker returns.
 *
 * @example
 * ```ts
 * const renderReport = defineRemoteTool({ input: z.object({ topic: z.string() }), output: z.object({ pages: z.number() }) })
 * ```
 */
export function defineRemoteTool<TInput, TOutput = unknown, TArgs = TInput>(definition: {
  readonly description?: string
  readonly input: z.ZodType<TInput, TArgs>
  readonly output?: z.ZodType<TOutput>
  readonly retry?: RetryPolicy
}): RemoteToolDefinition<TInput, TOutput, TArgs> {
  return {
    ...(definition.description === undefined ? {} : { description: definition.description }),
    input: definition.input,
    ...(definition.retry === undefined ? {} : { retry: definition.retry }),
    remote: true,
    run: () => {
      throw new Error('a remote tool runs with a worker; call it through tool() in a run that has a worker transport')
    },
    ...(definition.output === undefined ? {} : { output: definition.output }),
  }
}

/** The budgets of one `agent()` call: the counted ones, and its own money budget. */
export interface AgentCallBudgets extends CallBudgets {
  /**
   * The most this call may spend over all its attempts, in dollars, as a
   * positive decimal (`"0.05"`); it is also bounded by the run's
   * `budgets.maxCostUsd`. An attempt whose worst case does not fit is not
   * dispatched (`cost-budget`).
   */
  readonly maxCostUsd?: string | number
}

/** Options of one `agent()` call. */
export interface AgentCallOptions {
  /** Catalog role: prompt and model identity only; every call gets the full tool surface. @default 'default' */
  readonly agent?: string
  readonly label?: string
  readonly phase?: string
  /** Transport retry: children to try when one times out before answering. @default 1 */
  readonly attempts?: number
  /** The call's own fuse; when it expires the child is aborted and the attempt fails as `call-timeout`. */
  readonly timeoutMs?: number
  /** Exact choice: the answer must be one of these; a mismatch gets one clarification turn in the same child. */
  readonly choice?: readonly string[]
  /** Returned instead of throwing `SchemaValidationError` when the clarification also misses. */
  readonly choiceFallback?: string
  /** Per-call budgets; each overrides the run-level value, and an increase is journaled. */
  readonly budgets?: AgentCallBudgets
  /**
   * How much the answer depends on this call, for the gap it leaves when it
   * could not be afforded (`budgets.maxCostUsd`): a `required` call refused
   * for money makes the run `cannot_answer`, any other one `partial`.
   * @default 'required'
   */
  readonly criticality?: StepCriticality
  /** The script's own acceptance check; a string return rejects the answer with that reason (`script-rejected`). */
  readonly accept?: (answer: string) => true | string
  /** Binds the call to a runtime worktree. Such calls may not declare `attempts > 1`. */
  readonly worktree?: string
  /** Binds the call to a workspace handle. Such calls may not declare `attempts > 1`. */
  readonly workspaceHandle?: string
}

/** What a successful `agent()` call returns. */
export interface AgentAnswer {
  /** The answer text, or the chosen value when the call declared `choice`. */
  readonly answer: string
  /** True when `choiceFallback` stood in for an answer outside the choices. */
  readonly usedFallback: boolean
  readonly callId: string
  readonly logicalCallId: string
  readonly attempt: number
  readonly attempts: number
  readonly usage: Usage | undefined
}

/** Options of one `tool()` call. */
export interface ToolCallOptions {
  /** Seed 001 retry policy for this call; overrides the tool's default. */
  readonly retry?: RetryPolicy
  readonly label?: string
}

/** Options of one `spawn()`: the seed's `sub_agent.spawn` action. */
export interface SpawnOptions {
  /**
   * Seed 001 retry policy of the spawn: a failed child is spawned again as a
   * new attempt, in a new execution, while attempts remain; a timeout is
   * always retryable; a cancelled child and a hard stop never retry.
   * @default no retry, no timeout
   */
  readonly retry?: RetryPolicy
  readonly label?: string
}

/**
 * The `spawn()` of a workflow context: starts a saved workflow (a definition,
 * or the name of one registered with the runtime) as a child run and resolves
 * to its detached result once it completes.
 */
export type SpawnFunction = <TChildInput>(
  workflow: WorkflowDefinition<TChildInput> | string,
  input: NoInfer<TChildInput>,
  options?: SpawnOptions,
) => Promise<JsonValue>

/** A line for the run's journal from the script itself. */
export type LogFunction = (message: string, data?: unknown) => void

/** The tools a workflow declares, by name. */
export type ToolSet = Readonly<Record<string, DeclaredTool>>

/** What the script passes to a declared tool: its zod schema's input type. */
export type ToolArgs<TTool> = TTool extends { readonly input: z.ZodType<unknown, infer TArgs> } ? TArgs : unknown

/** What a declared tool resolves to: its `run`'s result, awaited. */
export type ToolResult<TTool> = TTool extends { readonly run: (...args: never[]) => infer TOutput } ? Awaited<TOutput> : unknown

/**
 * The `tool()` of a workflow context. With the workflow's tools known, the
 * name must be a declared one, the arguments must fit its schema's input, and
 * the promise carries its result type; with no tools declared it takes any
 * name and returns `unknown`.
 */
export type ToolFunction<TTools extends ToolSet> = <TName extends keyof TTools & string>(
  name: TName,
  args: ToolArgs<TTools[TName]>,
  options?: ToolCallOptions,
) => Promise<ToolResult<TTools[TName]>>

/** What a workflow's `run` receives. */
export interface WorkflowContext<TInput, TTools extends ToolSet = ToolSet> {
  readonly input: TInput
  readonly agent: (prompt: string, options?: AgentCallOptions) => Promise<AgentAnswer>
  readonly tool: ToolFunction<TTools>
  /**
   * Starts a saved workflow as a child run (seed `sub_agent.spawn`): its
   * journal and outputs live in a nested execution of this run, its agent
   * calls count against this run's invocation cap and deadline, and it is
   * judged like a root result: a child that does not complete, or returns
   * `partial: true` or another failure value, throws `ChildWorkflowError`.
   * A completed spawn is served from the journal on resume.
   */
  readonly spawn: SpawnFunction
  /**
   * Waits durably: `sleep('30s')`, `sleep('7d')`, `sleep(500)` (milliseconds)
   * or `sleep({ until: date })`. The timer is journaled (`timer_start`,
   * `timer_fired`) and takes a position like any call, so a resumed run
   * serves a fired timer from the journal and waits only for what is left of
   * an unfired one. It spends no attempt, retry or invocation; a sleep that
   * would end after the run's deadline is refused before it starts; a cancel
   * ends it at once. A bad duration throws `SLEEP_DURATION_INVALID`.
   */
  readonly sleep: SleepFunction
  /**
   * Waits for the next signal of `name` (declared under the workflow's
   * `signals`) that no wait or handler took yet, and returns its payload, or
   * `{ timedOut: true }` once `timeout` passes. A signal that came before the
   * wait is already in the journal and returns at once. The wait takes a
   * position like any call, so a resumed run gets the same signal again.
   */
  readonly waitForSignal: (name: string, options?: WaitForSignalOptions) => Promise<JsonValue | { readonly timedOut: true }>
  /**
   * Registers the handler of signal `name`: every signal of that name the run
   * received and no wait took, the ones before this call included, goes to it
   * once per execution, in order. A name is either handled or waited on.
   */
  readonly onSignal: (name: string, handler: SignalHandler) => void
  /**
   * Registers the handler of update `name`: every update of that name the
   * run accepted and that has not completed, the ones before this call
   * included, goes to it in order. Its return value (checked against the
   * declared output schema) is journaled as `update_completed` and answered
   * to the sender; a throw is `update_failed`. A completed update is never
   * run again, on replay or resume (its input and recorded output go to
   * `options.restore` instead, so the script can rebuild what the handler
   * kept in memory); one received and not completed is run again by a resume.
   */
  readonly onUpdate: (name: string, handler: UpdateHandler, options?: OnUpdateOptions) => void
  /** Fail-closed fan-out; see @locus/groups. */
  readonly parallel: typeof parallel
  /** Fail-closed staged fan-out; see @locus/groups. */
  readonly pipeline: typeof pipeline
  /** Aborted when the host cancels the run. */
  readonly signal: AbortSignal
  readonly runId: string
  readonly log: LogFunction
}

/** Options of one `waitForSignal()`. */
export interface WaitForSignalOptions {
  /** How long to wait (as `sleep()` takes it); past it the wait returns `{ timedOut: true }`. @default no timeout */
  readonly timeout?: SleepFor
}

/** Who sent a signal, and through which surface. */
export interface SignalSender {
  readonly from: string
  readonly via: SignalVia
}

/** An `onSignal()` handler: called once per signal of its name, in the order they were received. */
export type SignalHandler = (payload: JsonValue, sender: SignalSender) => unknown

/** The signals a workflow declares: each name's payload schema. */
export type SignalSet = Readonly<Record<string, z.ZodType>>

/**
 * The queries a workflow declares: each answers from the run's journal fold
 * (its {@link RunView}), so it works for a run no process holds.
 */
export type QuerySet = Readonly<Record<string, (view: RunView) => unknown>>

/** Who sent an update, through which surface, and its id (the same in every execution). */
export interface UpdateSender extends SignalSender {
  readonly updateId: string
}

/** Options of one `onUpdate()`. */
export interface OnUpdateOptions {
  /**
   * Called instead of the handler, in order, for each update of this name an
   * earlier execution completed (a resume, a replay, a PostgreSQL run woken
   * after a park): the input and the output it answered. For state the
   * handler keeps in the script's memory; side effects are not repeated.
   */
  readonly restore?: (input: JsonValue, output: JsonValue) => void
}

/** An `onUpdate()` handler: called once per accepted update of its name, in order; what it returns (or resolves to) is the update's result. */
export type UpdateHandler = (input: JsonValue, sender: UpdateSender) => unknown

/**
 * One update a workflow declares: its input and output schemas, and
 * `validate`, run on an input that fit the schema: a string (or strings)
 * rejects the update with those issues (400, nothing journaled); `undefined`
 * or an empty array accepts it.
 */
export interface UpdateDeclaration {
  readonly input: z.ZodType
  readonly output: z.ZodType
  readonly validate?: (input: JsonValue) => string | readonly string[] | undefined
}

/** The updates a workflow declares, by name. */
export type UpdateSet = Readonly<Record<string, UpdateDeclaration>>

/** What `sleep()` takes: a duration (`'500ms'`, `'30s'`, `'10m'`, `'2h'`, `'7d'`, or milliseconds) or an absolute time. */
export type SleepFor = string | number | { readonly until: Date }

/** `sleep()` of a workflow context: waits durably, resuming where it left off after a crash. */
export type SleepFunction = (duration: SleepFor) => Promise<void>

/** A workflow as an author declares it. */
export interface WorkflowDefinition<TInput = unknown, TTools extends ToolSet = ToolSet> {
  readonly name: string
  readonly description?: string
  readonly input?: z.ZodType<TInput>
  readonly tools?: TTools
  readonly agents?: Readonly<Record<string, AgentConfig>>
  /**
   * The filesystem isolation intent of the workflow, for review (e.g.
   * `read-only`, `worktree`): recorded in `run_start` and shown by the
   * inspector. It is not authorization, a sandbox or a tool allowlist: nothing
   * enforces it.
   */
  readonly workspaceMode?: string
  /** Signals the run accepts while it runs (`POST /v1/runs/{id}/signals/{name}`, `locus signal`), by name: each payload's zod schema. */
  readonly signals?: SignalSet
  /** Updates the run accepts while it runs (`POST /v1/runs/{id}/updates/{name}`, `locus update`), by name: validated, journaled, run by the script's `onUpdate` handler, answered with its result. */
  readonly updates?: UpdateSet
  /** Queries answered from the run's journal fold (`GET /v1/runs/{id}/queries/{name}`, `locus query`), by name. */
  readonly queries?: QuerySet
  /**
   * Concurrency limits: at most `limit` runs with the same `key(input)` hold
   * a slot at once, on one process or across every worker sharing a
   * PostgreSQL database (a run parked on a deferral or a timer holds none).
   * Several may apply to one run (per tenant and global). Keys take turns
   * among runs ready to start, weighted by `weight`. A limit that is not a
   * positive whole number is refused here; a key function that throws or
   * returns a non-string refuses the run's start (`CONCURRENCY_KEY_INVALID`).
   */
  readonly concurrency?: readonly ConcurrencyLimit<TInput>[]
  /**
   * Whether the run's `budgets.deadlineMs` counts from its start (time spent
   * waiting for a slot is free) or from its enqueue. @default 'from-start'
   */
  readonly deadlineCounts?: DeadlineCounts
  // A method, so that a workflow with typed tools is still a WorkflowDefinition.
  run(context: WorkflowContext<TInput, TTools>): unknown
}

const WORKFLOW_MARKER = Symbol.for('locus.workflow')

/**
 * Declares a workflow: a name, a zod input schema, the tools and agent roles it
 * offers, and the script.
 *
 * @example
 * ```ts
 * export default defineWorkflow({
 *   name: 'triage',
 *   input: z.object({ ticket: z.string() }),
 *   agents: { analyst: { system: 'You triage support tickets.' } },
 *   async run({ input, agent }) {
 *     const { answer } = await agent(`Summarise ticket ${input.ticket}`, { agent: 'analyst' })
 *     return { ok: true, summary: answer }
 *   },
 * })
 * ```
 */
export function defineWorkflow<TInput, TTools extends ToolSet = ToolSet>(definition: WorkflowDefinition<TInput, TTools>): WorkflowDefinition<TInput, TTools> {
  checkFlowDefinition(definition)
  const marked = { ...definition }
  Object.defineProperty(marked, WORKFLOW_MARKER, { value: true, enumerable: false })
  return marked
}

/** True for a value made by `defineWorkflow`, whichever copy of the package made it. */
export function isWorkflowDefinition(value: unknown): value is WorkflowDefinition {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[WORKFLOW_MARKER] === true
}
