import { dirname } from 'node:path'
import { RunOwnershipError } from '@locus/runtime'
import { CliError } from '../cli-error.js'

/**
 * The runtime's refusals to start or continue a run (`RUN_EXISTS`,
 * `RUN_OWNED`) as the CLI's exit-2 errors, saying which command to use
 * instead; `undefined` for any other error. `requestedRunId` is the
 * `--run-id` the person gave, if any.
 */
export function asCliOwnershipError(error: unknown, requestedRunId?: string): CliError | undefined {
  if (!RunOwnershipError.isInstance(error)) return undefined
  const id = error.runId
  if (error.code === 'RUN_EXISTS' && requestedRunId === id) {
    return new CliError(
      'CLI_USAGE',
      `Run ${id} already exists in ${dirname(error.runDir)}, and a new run never writes into an existing one. ` +
        `Continue it with \`locus resume ${id}\`, check that it replays with \`locus replay ${id}\`, ` +
        'or start a new run with another --run-id (or none, for a fresh id).',
      { cause: error },
    )
  }
  if (error.code === 'RUN_OWNED') {
    return new CliError('CLI_USAGE', `${error.message} \`locus journal ${id} --follow\` shows what it is doing.`, { cause: error })
  }
  return new CliError('CLI_USAGE', error.message, { cause: error })
}
