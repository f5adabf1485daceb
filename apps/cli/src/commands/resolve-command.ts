import { validateRunId } from '@locus/journal'
import { createRuntime } from '@locus/runtime'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { openRunStore } from '../open-run-store.js'

/** The flags of `locus resolve`. */
export interface ResolveFlags {
  readonly result?: string | undefined
  readonly reject?: string | undefined
  readonly retryable?: boolean | undefined
  readonly runsDir?: string | undefined
  readonly databaseUrl?: string | undefined
}

/**
 * Answers a deferred tool of a run from another shell: `--result '<json>'`
 * resolves it, `--reject '<message>'` fails it (terminal unless
 * `--retryable`). The answer is kept by the run's store (the runs directory,
 * or PostgreSQL with `--database-url`); the process executing the run picks
 * it up, or the next `locus resume` (or worker) does.
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
    answer = { kind: 'resolved' as const, result: result as never }
  } else {
    answer = { kind: 'rejected' as const, error: flags.reject ?? '', retryable: flags.retryable === true }
  }
  const { store, close } = openRunStore(flags, io, { maxConnections: 1 })
  let outcome
  try {
    outcome = await createRuntime({ store, workflows: [] }).answerDeferred(runId, deferredId, answer)
  } finally {
    await close()
  }
  if (!outcome.ok) throw new CliError('CLI_USAGE', outcome.status === 'invalid' ? outcome.issues.join('; ') : outcome.message)
  io.stdout.write(outcome.status === 'already-answered' ? `${deferredId} already had this answer\n` : `${deferredId} answered; the run picks it up (or \`locus resume ${runId}\` does)\n`)
  return EXIT_CODES.completed
}

