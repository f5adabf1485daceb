import { JsonValueSchema, type RunStartLine } from '@locus/journal'
import type { JsonValue } from '@locus/outcome'
import type { StdioTransportSettings } from '@locus/protocol'
import { JITTER_MODES } from '@locus/retry'
import { z } from 'zod'
import { LAUNCH_MODES, type RunBudgets } from './budgets.js'
import type { CallBudgets } from './host.js'
import type { ExecutionInfo, RunStore } from '@locus/store'
import type { RunOptions } from './run-options.js'

// Every field is read on its own: a field a journal lacks (an older version)
// or holds in another shape is dropped, never the whole record, so a resume
// keeps what it can and flags or defaults fill the rest.
const positive = z.number().int().positive().optional().catch(undefined)
const bound = z.number().int().positive().nullable().optional().catch(undefined)
const text = z.string().min(1).nullable().optional().catch(undefined)

/**
 * The schema of `run_start.options`: what a run records about how it was
 * started so that `resume` and `replay` can start it again the same way. The
 * runtime writes it in `run-workflow-script.ts`; {@link recordedRunOptions}
 * reads it back. Parsing never fails: a field missing or malformed (a journal
 * written by an older version) reads as absent.
 */
export const RecordedRunOptionsSchema = z
  .looseObject({
    launchMode: z.enum(LAUNCH_MODES).optional().catch(undefined),
    concurrency: positive.nullable().catch(undefined),
    durability: z.enum(['none', 'batch', 'line']).optional().catch(undefined),
    budgets: z
      .looseObject({
        maxTotalAgentInvocations: positive,
        deadlineMs: positive,
        perCall: z
          .looseObject({
            maxToolCalls: positive,
            maxOutputTokens: positive,
            maxAnswerChars: positive,
            turnTimeoutMs: bound,
            turnIdleMs: bound,
          })
          .optional()
          .catch(undefined),
        /** The run tree's money budget, as a decimal string of dollars. */
        maxCostUsd: z.string().regex(/^\d+(\.\d+)?$/).optional().catch(undefined),
      })
      .optional()
      .catch(undefined),
    /** Whether the run was allowed to call models without a price under its money budget. */
    allowUnpriced: z.boolean().optional().catch(undefined),
    /** The host's name (`scripted`, `ai-sdk`, ...). */
    host: text,
    /** What the host recorded to be built again: plain JSON, never a secret. */
    hostSettings: JsonValueSchema.optional().catch(undefined),
    /** How the run's remote tools reached their worker (a stdio command), to start it again: never its environment. */
    workerSettings: z
      .object({ transport: z.literal('stdio'), command: z.string().min(1), args: z.array(z.string()), cwd: z.string().optional() })
      .optional()
      .catch(undefined),
    /** The workflow file the run was started from. */
    source: text,
    retryBudget: z.number().int().min(0).optional().catch(undefined),
    jitter: z.enum(JITTER_MODES).optional().catch(undefined),
  })
  .catch({})
  .meta({ id: 'RecordedRunOptions' })

/** The scheduling options a resume starts with unless flags override them. */
export type RecordedExecutionOptions = Pick<RunOptions, 'budgets' | 'concurrency' | 'durability' | 'launchMode' | 'retryBudget' | 'jitter' | 'allowUnpriced'>

/** What one `run_start` recorded about how its run was started. */
export interface RecordedRunOptions {
  /** The workflow file, when the run was started from one. */
  readonly source: string | undefined
  /** The host's name. */
  readonly host: string | undefined
  /** The host's recorded settings, to build it again. */
  readonly hostSettings: JsonValue | undefined
  /** How the run's remote tools reached their stdio worker, to start the same one on resume. */
  readonly workerSettings: StdioTransportSettings | undefined
  readonly options: RecordedExecutionOptions
}

/**
 * Reads back the options a `run_start` line recorded: budgets (the money
 * budget among them), whether unpriced models were allowed, concurrency,
 * durability, launch mode, retry budget and jitter, the host and its
 * settings, and the workflow file. Unknown or malformed fields are dropped.
 *
 * @example
 * ```ts
 * const recorded = recordedRunOptions(view.runStart)
 * await resumeRun(runId, workflow, { ...recorded.options, host })
 * ```
 */
export function recordedRunOptions(line: Pick<RunStartLine, 'options'> | undefined): RecordedRunOptions {
  const parsed = RecordedRunOptionsSchema.parse(line?.options ?? {})
  const perCall = parsed.budgets?.perCall
  const perCallBudgets: CallBudgets = {
    ...(perCall?.maxToolCalls === undefined ? {} : { maxToolCalls: perCall.maxToolCalls }),
    ...(perCall?.maxOutputTokens === undefined ? {} : { maxOutputTokens: perCall.maxOutputTokens }),
    ...(perCall?.maxAnswerChars === undefined ? {} : { maxAnswerChars: perCall.maxAnswerChars }),
    ...(perCall?.turnTimeoutMs === undefined ? {} : { turnTimeoutMs: perCall.turnTimeoutMs }),
    ...(perCall?.turnIdleMs === undefined ? {} : { turnIdleMs: perCall.turnIdleMs }),
  }
  const budgets: RunBudgets = {
    ...(parsed.budgets?.maxTotalAgentInvocations === undefined ? {} : { maxTotalAgentInvocations: parsed.budgets.maxTotalAgentInvocations }),
    ...(parsed.budgets?.deadlineMs === undefined ? {} : { deadlineMs: parsed.budgets.deadlineMs }),
    ...(Object.keys(perCallBudgets).length === 0 ? {} : { perCall: perCallBudgets }),
    ...(parsed.budgets?.maxCostUsd === undefined ? {} : { maxCostUsd: parsed.budgets.maxCostUsd }),
  }
  return {
    source: parsed.source ?? undefined,
    host: parsed.host ?? undefined,
    hostSettings: parsed.hostSettings,
    workerSettings: parsed.workerSettings,
    options: {
      ...(Object.keys(budgets).length === 0 ? {} : { budgets }),
      ...(parsed.concurrency === undefined || parsed.concurrency === null ? {} : { concurrency: parsed.concurrency }),
      ...(parsed.durability === undefined ? {} : { durability: parsed.durability }),
      ...(parsed.launchMode === undefined ? {} : { launchMode: parsed.launchMode }),
      ...(parsed.retryBudget === undefined ? {} : { retryBudget: parsed.retryBudget }),
      ...(parsed.jitter === undefined ? {} : { jitter: parsed.jitter }),
      ...(parsed.allowUnpriced === undefined ? {} : { allowUnpriced: parsed.allowUnpriced }),
    },
  }
}

/** An execution as far as how it started: its identity and its `run_start` line, if it has one. A `StoredExecution` is one. */
export interface ExecutionStart {
  readonly info: ExecutionInfo
  readonly view: { readonly runStart: RunStartLine | undefined }
}

/** The root execution and every resume of a run (oldest first), as far as how they started. A `StoredRun` is one. */
export interface RunStarts {
  readonly root: ExecutionStart
  readonly executions: readonly ExecutionStart[]
}

/**
 * Reads how a stored run's root and resumes started: the first line of each,
 * not their whole journals, which `resume` reads anyway for its recording.
 */
export async function readRunStarts(store: RunStore, runId: string): Promise<RunStarts> {
  const infos = (await store.listExecutions(runId)).filter((info) => info.kind === 'root' || info.kind === 'resume')
  const executions = await Promise.all(
    infos.map(async (info): Promise<ExecutionStart> => {
      for await (const line of store.readLines(info, { limit: 1 })) return { info, view: { runStart: line.type === 'run_start' ? line : undefined } }
      return { info, view: { runStart: undefined } }
    }),
  )
  // A run queued for workers has no execution until one starts it.
  const root = executions[0] ?? { info: { runId, executionId: runId, kind: 'root', location: `${store.kind}:${runId}` }, view: { runStart: undefined } }
  return { root, executions: executions.length === 0 ? [root] : executions }
}

/** How a stored run was started, as `resume` and `replay` start it again. */
export interface RecordedStart extends RecordedRunOptions {
  /**
   * The execution whose `run_start` this is: the root's, or, when the root's
   * journal holds none, the latest execution that has one; `undefined` when
   * no execution of the run recorded a `run_start`.
   */
  readonly executionId: string | undefined
  /**
   * The input to pass on when the root recorded none (its journal is empty
   * but a later execution started); `undefined` otherwise, so the runtime
   * reads the root's input as usual.
   */
  readonly fallbackInput: JsonValue | undefined
}

/**
 * How a stored run was started: the options of the root's `run_start`, or of
 * the latest execution's when the root recorded none (its journal is empty or
 * torn before its first line). The workflow file falls back to the latest
 * execution that names one (a run started from code, resumed with a file).
 */
export function recordedStart(run: RunStarts): RecordedStart {
  const newestFirst = [...run.executions].reverse()
  const starting: ExecutionStart | undefined = [run.root, ...newestFirst].find((execution) => execution.view.runStart !== undefined)
  const recorded = recordedRunOptions(starting?.view.runStart)
  const source = recorded.source ?? newestFirst.map((execution) => recordedRunOptions(execution.view.runStart).source).find((candidate) => candidate !== undefined)
  return {
    ...recorded,
    source,
    executionId: starting?.info.executionId,
    fallbackInput: starting === undefined || starting === run.root ? undefined : starting.view.runStart?.input,
  }
}
