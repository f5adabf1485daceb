import { z } from 'zod'
import type { JournalLine } from '@locus/journal'
import type { OutcomeStore } from '@locus/partial'
import type { RetryClock } from '@locus/retry'
import { LAUNCH_MODES, type LaunchMode, type RunBudgets } from './budgets.js'
import { RuntimeInputError } from './errors.js'
import type { AgentHost } from './host.js'
import { describeZodIssues } from './zod-issues.js'

/** Options of one run. */
export interface RunOptions {
  /** Where runs are stored. @default `<cwd>/.locus-pi/runs` */
  readonly runsDir?: string
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
  /** The clock that timeouts, backoff and the run deadline read. @default the system clock */
  readonly clock?: RetryClock
  /** Receives every journal line as it is written: a live subscription for CLIs and servers. */
  readonly onEvent?: (line: JournalLine) => void
  /** Where the run's answer outcome and gaps are recorded when it ends (see @locus/partial). */
  readonly metrics?: OutcomeStore
  /** Where the workflow came from (a file path), recorded in run_start so resume and replay can load it again. */
  readonly source?: string
}

const positiveInteger = (field: string) =>
  z.number({ error: `${field} must be a number` }).int(`${field} must be a whole number`).positive(`${field} must be at least 1`)

const callBudgetsSchema = z
  .object({
    maxToolCalls: positiveInteger('maxToolCalls').optional(),
    maxOutputTokens: positiveInteger('maxOutputTokens').optional(),
    maxAnswerChars: positiveInteger('maxAnswerChars').optional(),
  })
  .strict()

export const CallBudgetsSchema = callBudgetsSchema

const runOptionsSchema = z
  .object({
    runsDir: z.string().min(1).optional(),
    cwd: z.string().min(1).optional(),
    input: z.unknown().optional(),
    host: z
      .custom<AgentHost>((value) => typeof value === 'object' && value !== null && typeof (value as AgentHost).openSession === 'function', {
        error: 'host must be an AgentHost (an object with openSession())',
      })
      .optional(),
    budgets: z
      .object({
        maxTotalAgentInvocations: positiveInteger('maxTotalAgentInvocations').optional(),
        deadlineMs: positiveInteger('deadlineMs').optional(),
        perCall: callBudgetsSchema.optional(),
      })
      .strict()
      .optional(),
    launchMode: z.enum(LAUNCH_MODES).optional(),
    concurrency: positiveInteger('concurrency').optional(),
    durability: z.enum(['none', 'batch', 'line']).optional(),
    signal: z.custom<AbortSignal>((value) => value instanceof AbortSignal, { error: 'signal must be an AbortSignal' }).optional(),
    runId: z.string().min(1).optional(),
    clock: z
      .custom<RetryClock>(
        (value) => typeof value === 'object' && value !== null && typeof (value as RetryClock).now === 'function' && typeof (value as RetryClock).sleep === 'function',
        { error: 'clock must have now() and sleep(ms, signal)' },
      )
      .optional(),
    onEvent: z.custom<(line: JournalLine) => void>((value) => typeof value === 'function', { error: 'onEvent must be a function' }).optional(),
    metrics: z
      .custom<OutcomeStore>((value) => typeof value === 'object' && value !== null && typeof (value as OutcomeStore).recordRun === 'function', {
        error: 'metrics must be an OutcomeStore from @locus/partial',
      })
      .optional(),
    source: z.string().min(1).optional(),
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
