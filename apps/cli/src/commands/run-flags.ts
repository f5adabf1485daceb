import type { LaunchMode, RunBudgets, RunOptions } from '@locus/runtime'
import { formatUsd, parseUsd } from '@locus/cost'
import { CliError } from '../cli-error.js'
import type { HostFlags } from '../create-host.js'
import type { InputFlags } from '../read-workflow-input.js'

/** Flags every command that shows output shares. */
export interface OutputFlags {
  readonly runsDir?: string | undefined
  readonly json?: boolean | undefined
  readonly verbose?: boolean | undefined
}

/** Budget, scheduling and journal flags of `locus run` (and `locus resume`, where they override the recorded ones). */
export interface ExecutionFlags {
  readonly maxAgents?: number | undefined
  readonly deadline?: number | undefined
  readonly maxToolCalls?: number | undefined
  readonly maxOutputTokens?: number | undefined
  readonly maxAnswerChars?: number | undefined
  readonly concurrency?: number | undefined
  readonly durability?: 'none' | 'batch' | 'line' | undefined
  readonly launchMode?: LaunchMode | undefined
  /** `--retry-budget <n>`: retries the whole run may make, tool and agent alike. */
  readonly retryBudget?: number | undefined
  /** `--jitter <mode>`: how tool retry backoff is spread. */
  readonly jitter?: JitterMode | undefined
  /** `--prices <file>`: your prices per model, over the shipped catalogue. */
  readonly prices?: string | undefined
  /** `--max-cost <usd>`: the most the run tree may spend, a decimal string of dollars (read by {@link parseMaxCost}). */
  readonly maxCost?: string | undefined
  /** `--allow-unpriced`: start under a money budget although a model has no price. */
  readonly allowUnpriced?: boolean | undefined
}

type JitterMode = NonNullable<RunOptions['jitter']>

/** The values `--jitter` accepts: the jitter modes of @locus/retry. */
export const JITTER_FLAG_MODES = ['none', 'full', 'equal'] as const satisfies readonly JitterMode[]

/**
 * Reads `--retry-budget`: a whole number of retries, `0` (no retry at all) or more.
 *
 * @throws {CliError} `CLI_USAGE` naming the flag.
 */
export function parseRetryBudget(text: string): number {
  const value = Number(text)
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value)) {
    throw new CliError('CLI_USAGE', `--retry-budget must be a whole number of retries, 0 or more; got ${JSON.stringify(text)}.`)
  }
  return value
}

/**
 * Reads `--max-cost`: a positive decimal number of dollars (`2.50`), kept as
 * the decimal string so no float ever holds it.
 *
 * @throws {CliError} `CLI_USAGE` naming the flag.
 */
export function parseMaxCost(text: string): string {
  try {
    return formatUsd(parseUsd(text, '--max-cost', { positive: true }))
  } catch (error) {
    throw new CliError('CLI_USAGE', `--max-cost must be a positive decimal number of dollars, such as 2.50; got ${JSON.stringify(text)}.`, { cause: error })
  }
}

type ExecutionOptions = Pick<RunOptions, 'budgets' | 'concurrency' | 'durability' | 'launchMode' | 'retryBudget' | 'jitter' | 'allowUnpriced'>

/** All flags of `locus run`. */
export interface RunFlags extends OutputFlags, ExecutionFlags, HostFlags, InputFlags {
  readonly quiet?: boolean | undefined
  readonly runId?: string | undefined
  /** A shell command that starts the worker serving the run's remote tools. */
  readonly worker?: string | undefined
  /** `--otel`: export the run's spans over OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  readonly otel?: boolean | undefined
  /**
   * `--tokens`: show the text of the run's LLM calls live on stderr, read
   * back from the run's token stream; the progress is then plain lines
   * instead of the redrawn tree, so the two never overwrite each other.
   */
  readonly tokens?: boolean | undefined
}

/**
 * Whether `locus run` shows tokens: only with `--tokens`. Opt-in, so no
 * existing output changes; tokens never go to stdout, so its contract (the
 * progress lines, the JSON lines, the summary) is the same with them.
 */
export function showsTokens(flags: Pick<RunFlags, 'tokens'>): boolean {
  return flags.tokens === true
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/** Run budgets from flags; `undefined` when no budget flag was given. */
export function budgetsFromFlags(flags: ExecutionFlags, base: RunBudgets = {}): RunBudgets | undefined {
  const perCall: Mutable<NonNullable<RunBudgets['perCall']>> = { ...base.perCall }
  if (flags.maxToolCalls !== undefined) perCall.maxToolCalls = flags.maxToolCalls
  if (flags.maxOutputTokens !== undefined) perCall.maxOutputTokens = flags.maxOutputTokens
  if (flags.maxAnswerChars !== undefined) perCall.maxAnswerChars = flags.maxAnswerChars
  const budgets: Mutable<RunBudgets> = { ...base }
  if (flags.maxAgents !== undefined) budgets.maxTotalAgentInvocations = flags.maxAgents
  if (flags.deadline !== undefined) budgets.deadlineMs = flags.deadline
  if (flags.maxCost !== undefined) budgets.maxCostUsd = flags.maxCost
  if (Object.keys(perCall).length > 0) budgets.perCall = perCall
  return Object.keys(budgets).length === 0 ? undefined : budgets
}

/** The scheduling part of run options from flags, over recorded values. */
export function executionOptions(flags: ExecutionFlags, base: ExecutionOptions = {}): ExecutionOptions {
  const budgets = budgetsFromFlags(flags, base.budgets)
  const concurrency = flags.concurrency ?? base.concurrency
  const durability = flags.durability ?? base.durability
  const launchMode = flags.launchMode ?? base.launchMode
  const retryBudget = flags.retryBudget ?? base.retryBudget
  const jitter = flags.jitter ?? base.jitter
  const allowUnpriced = flags.allowUnpriced ?? base.allowUnpriced
  return {
    ...(budgets === undefined ? {} : { budgets }),
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(durability === undefined ? {} : { durability }),
    ...(launchMode === undefined ? {} : { launchMode }),
    ...(retryBudget === undefined ? {} : { retryBudget }),
    ...(jitter === undefined ? {} : { jitter }),
    ...(allowUnpriced === undefined ? {} : { allowUnpriced }),
  }
}
