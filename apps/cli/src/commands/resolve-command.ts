import { validateRunId } from '@locus/journal'
import { type WorkflowDefinition, createRuntime, isWorkflowDefinition, readStoredRun, recordedStart } from '@locus/runtime'
import type { RunStore } from '@locus/store'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { loadWorkflow } from '../load-workflow.js'
import { openRunStore } from '../open-run-store.js'

/** The flags of `locus resolve`. */
export interface ResolveFlags {
  readonly result?: string | undefined
  readonly reject?: string | undefined
  readonly retryable?: boolean | undefined
  readonly runsDir?: string | undefined
  readonly databaseUrl?: string | undefined
  /** `--workflow <file>`: the workflow whose tool schema checks the answer (default: the file the run recorded). */
  readonly workflow?: string | undefined
}

/**
 * The workflow whose deferred tool's output schema checks a `--result`:
 * `--workflow` when given (a load error stops the command), else the file the
 * run recorded. A recorded file that cannot be loaded only costs the check
 * here (said on stderr); the run still checks the answer when it reads it.
 */
export async function checkingWorkflow(store: RunStore, runId: string, flags: ResolveFlags, io: CliIo): Promise<WorkflowDefinition | undefined> {
  if (flags.workflow !== undefined) {
    const loaded = await loadWorkflow(flags.workflow, io.cwd)
    return isWorkflowDefinition(loaded.workflow) ? loaded.workflow : undefined
  }
  let source: string | undefined
  try {
    source = recordedStart(await readStoredRun(store, runId)).source
  } catch {
    // An unknown run is reported by the answer itself, with the store's own words.
    return undefined
  }
  if (source === undefined) return undefined
  try {
    const loaded = await loadWorkflow(source, io.cwd)
    return isWorkflowDefinition(loaded.workflow) ? loaded.workflow : undefined
  } catch (error) {
    io.stderr.write(`locus: warning: the answer is not checked here: the run's workflow ${source} could not be loaded (${(error as Error).message}); the run checks it when it reads it. Pass --workflow <file> to check it now.\n`)
    return undefined
  }
}

/**
 * Answers a deferred tool of a run from another shell: `--result '<json>'`
 * resolves it, `--reject '<message>'` fails it (terminal unless
 * `--retryable`). The answer is kept by the run's store (the runs directory,
 * or PostgreSQL with `--database-url`); the process executing the run picks
 * it up, or the next `locus resume` (or worker) does. The run's
 * `deferred_settled` says it was decided by `cli`, via `cli`.
 */
export async function resolveCommand(runId: string, deferredId: string, flags: ResolveFlags, io: CliIo): Promise<ExitCode> {
  validateRunId(runId)
  if ((flags.result === undefined) === (flags.reject === undefined)) {
    throw new CliError('CLI_USAGE', 'Pass exactly one of --result \'<json>\' or --reject \'<message>\'.')
  }
  let answer
  if (flags.result !== undefined) {
    let result: unknown
    try {
      result = JSON.parse(flags.result)
    } catch (error) {
      throw new CliError('CLI_INPUT_INVALID', `--result is not JSON: ${(error as Error).message}.`)
    }
    answer = { kind: 'resolved' as const, result: result as never, decidedBy: 'cli', via: 'cli' as const }
  } else {
    answer = { kind: 'rejected' as const, error: flags.reject ?? '', retryable: flags.retryable === true, decidedBy: 'cli', via: 'cli' as const }
  }
  const { store, close } = openRunStore(flags, io, { maxConnections: 1 })
  let outcome
  let tool: string | undefined
  try {
    // A kept answer is final: one that does not fit the tool's output schema is refused here, before it is kept.
    const workflow = answer.kind === 'resolved' ? await checkingWorkflow(store, runId, flags, io) : undefined
    const runtime = createRuntime({ store, workflows: workflow === undefined ? [] : [workflow] })
    outcome = await runtime.answerDeferred(runId, deferredId, answer)
    if (!outcome.ok && outcome.status === 'invalid') tool = (await runtime.pendingDeferrals(runId)).find((pending) => pending.deferredId === deferredId)?.tool
  } finally {
    await close()
  }
  if (!outcome.ok && outcome.status === 'invalid') {
    throw new CliError(
      'CLI_INPUT_INVALID',
      `--result does not fit the output schema of ${tool === undefined ? 'the deferred tool' : `the tool "${tool}"`}: ${outcome.issues.join('; ')}. Nothing was kept; answer again with a result that fits.`,
    )
  }
  if (!outcome.ok) throw new CliError('CLI_USAGE', outcome.message)
  // On PostgreSQL the answer queues the run for a worker; `locus resume` reads the runs directory only.
  const next = flags.databaseUrl === undefined ? `the run picks it up (or \`locus resume ${runId}\` does)` : 'the run is queued again, and a `locus worker` on this database picks it up'
  io.stdout.write(outcome.status === 'already-answered' ? `${deferredId} already had this answer\n` : `${deferredId} answered; ${next}\n`)
  return EXIT_CODES.completed
}

