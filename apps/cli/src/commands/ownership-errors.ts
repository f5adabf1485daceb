import { dirname } from 'node:path'
import { RunExistsError, RunOwnedError } from '@locus/store'
import { CliError } from '../cli-error.js'

/**
 * The store's refusals to start or continue a run (`RUN_EXISTS`,
 * `RUN_OWNED`) as the CLI's exit-2 errors, saying which command to use
 * instead; `undefined` for any other error. `requestedRunId` is the
 * `--run-id` the person gave, if any.
 */
export function asCliOwnershipError(error: unknown, requestedRunId?: string): CliError | undefined {
  if (!RunExistsError.isInstance(error) && !RunOwnedError.isInstance(error)) return undefined
  const id = error.runId
  if (RunExistsError.isInstance(error) && requestedRunId === id) {
    return new CliError(
      'CLI_USAGE',
      `Run ${id} already exists in ${dirname(error.location)}, and a new run never writes into an existing one. ` +
        `Continue it with \`locus resume ${id}\`, check that it replays with \`locus replay ${id}\`, ` +
        'or start a new run with another --run-id (or none, for a fresh id).',
      { cause: error },
    )
  }
  if (RunOwnedError.isInstance(error)) {
    return new CliError('CLI_USAGE', `${error.message} \`locus journal ${id} --follow\` shows what it is doing.`, { cause: error })
  }
  return new CliError('CLI_USAGE', error.message, { cause: error })
}
