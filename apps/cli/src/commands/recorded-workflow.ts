import type { RunStartLine } from '@locus/journal'
import type { JsonValue } from '@locus/outcome'
import type { CallBudgets, RunOptions } from '@locus/runtime'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { displayPath } from '../format-summary.js'
import { type LoadedWorkflow, loadWorkflow } from '../load-workflow.js'
import { type ExecutionRecord, type RunRecord, firstLineOf } from '../run-record.js'

/** What a run's `run_start` recorded about how it was started. */
export interface RecordedStart {
  readonly source: string | undefined
  readonly host: string | undefined
  readonly options: Pick<RunOptions, 'budgets' | 'concurrency' | 'durability' | 'launchMode'>
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

function record(value: JsonValue | undefined): Readonly<Record<string, JsonValue>> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined
}

function positive(value: JsonValue | undefined): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined
}

function runStartOf(execution: ExecutionRecord): RunStartLine | undefined {
  return firstLineOf(execution.journal.lines, 'run_start')
}

/**
 * The `run_start` that says how the run was started: the root's, else (the
 * root's journal is empty or torn before its first line) the latest
 * execution's that has one.
 */
function startingLine(run: RunRecord): { readonly line: RunStartLine; readonly execution: ExecutionRecord } | undefined {
  for (const execution of [run.root, ...[...run.executions].reverse()]) {
    const line = runStartOf(execution)
    if (line !== undefined) return { line, execution }
  }
  return undefined
}

/** True when no execution of the run recorded a `run_start`: its journal is empty, so nothing was recorded. */
export function recordedNothing(run: RunRecord): boolean {
  return startingLine(run) === undefined
}

/** What is wrong with a run that recorded nothing, and what works instead; for `show`, `resume` and `replay`. */
export function describeNothingRecorded(run: RunRecord, cwd: string): { readonly problem: string; readonly remedy: string } {
  const journal = run.root.journal
  const state = journal.tornTail !== null ? `holds only a torn first line (${journal.tornTail.byteOffset} bytes complete)` : journal.lines.length === 0 && journal.invalid.length === 0 ? 'is empty' : 'holds no run_start line'
  return {
    problem:
      `its journal ${displayPath(run.root.journalPath, cwd)} ${state}: nothing was recorded ` +
      '(its process stopped before the first line reached the disk, as a run with --durability none can when killed at once)',
    remedy:
      `start it again with \`locus run <workflow file> --input '<json>'\`, or run it from the start as an execution of this run ` +
      `with \`locus resume ${run.runId} --workflow <workflow file>\` (the workflow's default input is used)`,
  }
}

/**
 * Reads the workflow file, host and scheduling options a run was started
 * with, from the root's `run_start`, or the latest execution's when the root
 * recorded none.
 */
export function recordedStart(run: RunRecord): RecordedStart {
  const starting = startingLine(run)
  const options = record(starting?.line.options)
  const budgets = record(options?.budgets)
  const perCall = record(budgets?.perCall)
  const maxToolCalls = positive(perCall?.maxToolCalls)
  const maxOutputTokens = positive(perCall?.maxOutputTokens)
  const maxAnswerChars = positive(perCall?.maxAnswerChars)
  const perCallBudgets: CallBudgets = {
    ...(maxToolCalls === undefined ? {} : { maxToolCalls }),
    ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
    ...(maxAnswerChars === undefined ? {} : { maxAnswerChars }),
  }
  const maxTotalAgentInvocations = positive(budgets?.maxTotalAgentInvocations)
  const deadlineMs = positive(budgets?.deadlineMs)
  const concurrency = positive(options?.concurrency)
  const durability = options?.durability
  const launchMode = options?.launchMode
  const fromRoot = starting?.execution === run.root
  return {
    source: typeof options?.source === 'string' ? options.source : latestSource(run),
    host: typeof options?.host === 'string' ? options.host : undefined,
    executionId: starting?.execution.executionId,
    fallbackInput: starting === undefined || fromRoot ? undefined : starting.line.input,
    options: {
      budgets: {
        ...(maxTotalAgentInvocations === undefined ? {} : { maxTotalAgentInvocations }),
        ...(deadlineMs === undefined ? {} : { deadlineMs }),
        ...(Object.keys(perCallBudgets).length === 0 ? {} : { perCall: perCallBudgets }),
      },
      ...(concurrency === undefined ? {} : { concurrency }),
      ...(durability === 'none' || durability === 'batch' || durability === 'line' ? { durability } : {}),
      ...(launchMode === 'interactive' || launchMode === 'background' ? { launchMode } : {}),
    },
  }
}

/** The workflow file the latest execution that recorded one was run from (a run started from code, resumed with `--workflow`). */
function latestSource(run: RunRecord): string | undefined {
  for (const execution of [...run.executions].reverse()) {
    const source = record(runStartOf(execution)?.options)?.source
    if (typeof source === 'string') return source
  }
  return undefined
}

/**
 * Loads the workflow a recorded run came from: `--workflow <file>` when given,
 * else the file recorded in `run_start.options.source` (the root's, or the
 * latest execution's when the root recorded none).
 *
 * @throws {CliError} `RUN_NOTHING_RECORDED` when the run recorded nothing and no `--workflow` was given,
 *   `CLI_USAGE` when no execution names a file, and the loader's errors.
 */
export async function loadRecordedWorkflow(run: RunRecord, flag: string | undefined, io: CliIo, command: string): Promise<LoadedWorkflow> {
  if (flag === undefined && recordedNothing(run)) {
    const { problem, remedy } = describeNothingRecorded(run, io.cwd)
    throw new CliError('RUN_NOTHING_RECORDED', `Run ${run.runId} cannot be ${command === 'resume' ? 'resumed' : 'replayed'}: ${problem}. Instead, ${remedy}.`)
  }
  const source = flag ?? recordedStart(run).source
  if (source === undefined) {
    throw new CliError('CLI_USAGE', `Run ${run.runId} does not record its workflow file (it was started from code); pass --workflow <file> to ${command} it.`)
  }
  return loadWorkflow(source, io.cwd)
}
