import type { JsonValue } from '@locus/outcome'
import type { CallBudgets, RunOptions } from '@locus/runtime'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { type LoadedWorkflow, loadWorkflow } from '../load-workflow.js'
import { type RunRecord, firstLineOf } from '../run-record.js'

/** What a run's first `run_start` recorded about how it was started. */
export interface RecordedStart {
  readonly source: string | undefined
  readonly host: string | undefined
  readonly options: Pick<RunOptions, 'budgets' | 'concurrency' | 'durability' | 'launchMode'>
}

function record(value: JsonValue | undefined): Readonly<Record<string, JsonValue>> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined
}

function positive(value: JsonValue | undefined): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined
}

/** Reads the workflow file, host and scheduling options a run was started with. */
export function recordedStart(run: RunRecord): RecordedStart {
  const options = record(firstLineOf(run.root.journal.lines, 'run_start')?.options)
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
  return {
    source: typeof options?.source === 'string' ? options.source : undefined,
    host: typeof options?.host === 'string' ? options.host : undefined,
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

/**
 * Loads the workflow a recorded run came from: `--workflow <file>` when given,
 * else the file recorded in `run_start.options.source`.
 *
 * @throws {CliError} `CLI_USAGE` when neither names a file, and the loader's errors.
 */
export async function loadRecordedWorkflow(run: RunRecord, flag: string | undefined, io: CliIo, command: string): Promise<LoadedWorkflow> {
  const source = flag ?? recordedStart(run).source
  if (source === undefined) {
    throw new CliError('CLI_USAGE', `Run ${run.runId} does not record its workflow file (it was started from code); pass --workflow <file> to ${command} it.`)
  }
  return loadWorkflow(source, io.cwd)
}
