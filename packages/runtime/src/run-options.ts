import { type PriceTable, parseUsd } from '@locus/cost'
import type { RunProgress } from './run-state.js'
import { z } from 'zod'
import type { JournalLine } from '@locus/journal'
import type { OutcomeStore } from '@locus/partial'
import { JITTER_MODES, type JitterMode, type RetryClock } from '@locus/retry'
import { LAUNCH_MODES, type LaunchMode, type RunBudgets } from './budgets.js'
import { RuntimeInputError } from './errors.js'
import { type AgentHost, hostSpecificationProblem } from './host.js'
import type { WorkflowDefinition } from './define.js'
import type { RunStore } from '@locus/store'
import type { TriggerTransport } from '@locus/protocol'
import { describeZodIssues } from './zod-issues.js'
import type { QueuedInfo } from './flow-control.js'
import type { RateLimiter } from './rate-limits.js'

/** A signal sent with a run's start ({@link RunOptions.startSignal}). */
export interface StartSignal {
  readonly name: string
  readonly payload?: unknown
  /** Who sent it: an API key's name, `cli`... @default `host` */
  readonly from?: string
}

/** Options of one run. */
export interface RunOptions {
  /** Where runs are stored. @default `<cwd>/.locus-pi/runs` */
  readonly runsDir?: string
  /**
   * A `RunStore` to run in instead of the runs directory, such as
   * `createMemoryRunStore()` (nothing written to disk) or a PostgreSQL store.
   * Fresh runs only for now: resume and replay read a runs directory.
   */
  readonly store?: RunStore
  /** How remote tools (`defineRemoteTool`) reach their worker: a transport from @locus/protocol (in-process, stdio). */
  readonly worker?: TriggerTransport
  /** The working directory the default runs directory hangs off. @default process.cwd() */
  readonly cwd?: string
  /** The workflow's input, validated by its zod schema. */
  readonly input?: unknown
  /** Where agent() calls run. Without one, an agent() call fails as `sdk-unavailable`. */
  readonly host?: AgentHost
  readonly budgets?: RunBudgets
  /** Selects the per-call budget defaults. @default 'interactive' */
  readonly launchMode?: LaunchMode
  /** Default branch concurrency of parallel() and pipeline(). @default unbounded */
  readonly concurrency?: number
  /** Journal durability: fsync per line, per batch, or not at all. @default 'batch' */
  readonly durability?: 'none' | 'batch' | 'line'
  /** Host cancellation: aborting it cancels the run. */
  readonly signal?: AbortSignal
  /** A run id to use instead of a generated one. */
  readonly runId?: string
  /**
   * Signal-with-start: a signal the workflow declares, checked with the input
   * before anything is written (an undeclared name or a payload failing its
   * schema throws `RUN_OPTIONS_INVALID`), then journaled as the run's first
   * signal (`signal_received`, `signalSeq` 0, `via: 'start'`) right after
   * `run_start`, before the script runs: `waitForSignal(name)` returns it at
   * once and an `onSignal(name)` handler gets it when registered. `from` is
   * who sent it. @default `host`. A fresh run's only: a resume ignores it.
   */
  readonly startSignal?: StartSignal
  /** The clock that timeouts, backoff and the run deadline read. @default the system clock */
  readonly clock?: RetryClock
  /** Receives every journal line as it is written: a live subscription for CLIs and servers. */
  readonly onEvent?: (line: JournalLine) => void
  /**
   * Aborting it suspends the execution instead of ending it: calls in flight
   * are abandoned as a cancel would, but nothing more is journaled (one `log`
   * line says why) and there is no `run_end`, so `resume` continues the run.
   */
  readonly suspendSignal?: AbortSignal
  /** Told each time the run starts or stops waiting only on deferrals (every call in flight is a deferred tool waiting for its answer). */
  readonly onWaitingChange?: (waitingOnly: boolean) => void
  /** Progress of agent calls while their model streams (tokens so far), for live views; never written to the journal. */
  readonly onProgress?: (progress: RunProgress) => void
  /** Where the run's answer outcome and gaps are recorded when it ends (see @locus/partial). */
  readonly metrics?: OutcomeStore
  /**
   * Prices every LLM request the host reports, from its usage (`llm_attempt.cost`),
   * and each agent attempt (`agent_end.cost`); its version is recorded in
   * `run_start` as `priceTable`. Build one with `loadPriceTable` of @locus/cost.
   * @default no pricing
   */
  readonly prices?: PriceTable
  /**
   * Lets a run with a money budget (`budgets.maxCostUsd`) start although a
   * model it may call has no price: that model's requests are counted as
   * unpriced and reserve nothing. @default false (such a run is refused)
   */
  readonly allowUnpriced?: boolean
  /**
   * Stands in for the value of the workflow's first concurrency key (under
   * that declaration's limit); with none declared, a key with no limit that
   * takes turns with the other keys.
   */
  readonly concurrencyKey?: string
  /** 0 to 9: among runs waiting on the same key, a higher one starts first. @default 0 */
  readonly priority?: number
  /**
   * The run waited to start (for a concurrency slot, a rate limit or runs of
   * higher priority): journaled as a `queued` line right after `run_start`,
   * and taken off its deadline when the workflow counts it `from-enqueue`.
   * Set by the worker or limiter that admitted it.
   */
  readonly queued?: QueuedInfo
  /** Where the workflow came from (a file path), recorded in run_start so resume and replay can load it again. */
  readonly source?: string
  /**
   * A resume refuses a run whose latest execution completed (`RunCompletedError`,
   * code `RUN_COMPLETED`), decided once the run is claimed. `locus resume` and
   * `createRuntime().resume` set it. @default false
   */
  readonly refuseCompleted?: boolean
  /**
   * Retries the whole run may make, tool retries and agent transport retries
   * alike: each retry a call's own rule allows draws one, and once none is left
   * the call ends with its last failure and its terminal record says
   * `retryRefused: { by: 'retry-budget' }`. First attempts never draw from it;
   * `0` allows no retry at all. A resumed execution starts with a full budget.
   * @default no run-wide limit
   */
  readonly retryBudget?: number
  /**
   * How each tool retry's backoff is spread (see `applyJitter` in @locus/retry):
   * `none` waits exactly `min(base ** n, max)` seconds, `full` a random part of
   * it, `equal` half of it plus a random part of the other half.
   * @default 'none'
   */
  readonly jitter?: JitterMode
  /**
   * Shared rate limits on the run's LLM calls (`createRateLimiter({ limits, clock })`):
   * before each turn of an agent call the limiter waits for room, and the
   * wait is journaled as `rate_wait { limit, waitedMs, callId }`. `createRuntime`
   * passes the one built from its `rateLimits`. @default no rate limits
   */
  readonly rateLimiter?: RateLimiter
  /** Workflows a script may `spawn()` by name; `createRuntime` passes its own. */
  readonly workflows?: readonly WorkflowDefinition[] | ReadonlyMap<string, WorkflowDefinition>
}

const positiveInteger = (field: string) =>
  z.number({ error: `${field} must be a number` }).int(`${field} must be a whole number`).positive(`${field} must be at least 1`)

const callBudgetsSchema = z
  .object({
    maxToolCalls: positiveInteger('maxToolCalls').optional(),
    maxOutputTokens: positiveInteger('maxOutputTokens').optional(),
    maxAnswerChars: positiveInteger('maxAnswerChars').optional(),
    turnTimeoutMs: positiveInteger('turnTimeoutMs').nullable().optional(),
    turnIdleMs: positiveInteger('turnIdleMs').nullable().optional(),
  })
  .strict()

/** A money budget: a positive decimal number of dollars, as a string (`"2.50"`) or a finite number. */
function costBudgetSchema(field: string) {
  return z.union([z.string(), z.number()], { error: `${field} must be a positive decimal number of dollars, as "2.50"` }).superRefine((value, context) => {
    try {
      parseUsd(value, field, { positive: true })
    } catch (error) {
      context.addIssue({ code: 'custom', message: error instanceof Error ? error.message.replace(/\.$/, '') : String(error) })
    }
  })
}

/** The call budgets `agent()` takes: the run-level ones and the call's own money budget. */
export const AgentCallBudgetsSchema = callBudgetsSchema.extend({ maxCostUsd: costBudgetSchema('budgets.maxCostUsd').optional() }).strict()

const runOptionsSchema = z
  .object({
    runsDir: z.string().min(1).optional(),
    worker: z
      .custom<TriggerTransport>((value) => typeof value === 'object' && value !== null && typeof (value as { send?: unknown }).send === 'function', {
        error: 'worker must be a transport with send(trigger) (createInProcessTransport, createStdioTransport from @locus/protocol)',
      })
      .optional(),
    store: z
      .custom<RunStore>((value) => typeof value === 'object' && value !== null && typeof (value as { createExecution?: unknown }).createExecution === 'function', {
        error: 'store must be a RunStore (createMemoryRunStore(), createFileRunStore(dir), ...)',
      })
      .optional(),
    cwd: z.string().min(1).optional(),
    input: z.unknown().optional(),
    host: z
      .custom<AgentHost>((value) => hostSpecificationProblem(value) === undefined, {
        error: (issue) => hostSpecificationProblem(issue.input) ?? 'host must be an AgentHost',
      })
      .optional(),
    budgets: z
      .object({
        maxTotalAgentInvocations: positiveInteger('maxTotalAgentInvocations').optional(),
        deadlineMs: positiveInteger('deadlineMs').optional(),
        perCall: callBudgetsSchema.optional(),
        maxCostUsd: costBudgetSchema('budgets.maxCostUsd').optional(),
      })
      .strict()
      .optional(),
    allowUnpriced: z.boolean({ error: 'allowUnpriced must be true or false' }).optional(),
    launchMode: z.enum(LAUNCH_MODES).optional(),
    concurrency: positiveInteger('concurrency').optional(),
    durability: z.enum(['none', 'batch', 'line']).optional(),
    signal: z.custom<AbortSignal>((value) => value instanceof AbortSignal, { error: 'signal must be an AbortSignal' }).optional(),
    runId: z.string().min(1).optional(),
    startSignal: z
      .object({ name: z.string({ error: 'startSignal.name must be a string' }).min(1, 'startSignal.name must not be empty'), payload: z.unknown().optional(), from: z.string().min(1).optional() })
      .strict()
      .optional(),
    clock: z
      .custom<RetryClock>(
        (value) => typeof value === 'object' && value !== null && typeof (value as RetryClock).now === 'function' && typeof (value as RetryClock).sleep === 'function',
        { error: 'clock must have now() and sleep(ms, signal)' },
      )
      .optional(),
    onEvent: z.custom<(line: JournalLine) => void>((value) => typeof value === 'function', { error: 'onEvent must be a function' }).optional(),
    suspendSignal: z.custom<AbortSignal>((value) => value instanceof AbortSignal, { error: 'suspendSignal must be an AbortSignal' }).optional(),
    onWaitingChange: z.custom<(waitingOnly: boolean) => void>((value) => typeof value === 'function', { error: 'onWaitingChange must be a function' }).optional(),
    onProgress: z.custom<(progress: RunProgress) => void>((value) => typeof value === 'function', { error: 'onProgress must be a function' }).optional(),
    metrics: z
      .custom<OutcomeStore>((value) => typeof value === 'object' && value !== null && typeof (value as OutcomeStore).recordRun === 'function', {
        error: 'metrics must be an OutcomeStore from @locus/partial',
      })
      .optional(),
    prices: z
      .custom<PriceTable>(
        (value) => typeof value === 'object' && value !== null && typeof (value as PriceTable).cost === 'function' && typeof (value as PriceTable).version === 'string',
        { error: 'prices must be a PriceTable from @locus/cost (loadPriceTable or createPriceTable)' },
      )
      .optional(),
    source: z.string().min(1).optional(),
    concurrencyKey: z.string({ error: 'concurrencyKey must be a string' }).min(1, 'concurrencyKey must not be empty').optional(),
    priority: z.number({ error: 'priority must be a number' }).int('priority must be a whole number').min(0, 'priority must be 0 to 9').max(9, 'priority must be 0 to 9').optional(),
    queued: z
      .object({
        keys: z.array(z.string()),
        reason: z.enum(['concurrency', 'rate', 'priority']),
        waitedMs: z.number().int().min(0),
      })
      .strict()
      .optional(),
    refuseCompleted: z.boolean({ error: 'refuseCompleted must be true or false' }).optional(),
    retryBudget: z
      .number({ error: 'retryBudget must be a number' })
      .int('retryBudget must be a whole number of retries')
      .min(0, 'retryBudget must be 0 or more')
      .optional(),
    jitter: z.enum(JITTER_MODES, { error: `jitter must be one of ${JITTER_MODES.join(', ')}` }).optional(),
    rateLimiter: z
      .custom<RateLimiter>((value) => typeof value === 'object' && value !== null && typeof (value as RateLimiter).acquire === 'function' && typeof (value as RateLimiter).retryAfter === 'function', {
        error: 'rateLimiter must be a RateLimiter (createRateLimiter({ limits }))',
      })
      .optional(),
    workflows: z
      .custom<readonly WorkflowDefinition[] | ReadonlyMap<string, WorkflowDefinition>>((value) => Array.isArray(value) || value instanceof Map, {
        error: 'workflows must be an array of workflow definitions (or a Map of them by name)',
      })
      .optional(),
  })
  .strict()

/** Validates run options; a bad field throws `RUN_OPTIONS_INVALID` naming it. */
export function parseRunOptions(options: unknown): RunOptions {
  const parsed = runOptionsSchema.safeParse(options ?? {})
  if (!parsed.success) {
    const issues = describeZodIssues(parsed.error, 'options')
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `Invalid run options:\n  ${issues.join('\n  ')}`, issues)
  }
  return options as RunOptions
}
