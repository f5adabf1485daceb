import { CommanderError } from 'commander'
import { RunIdError } from '@locus/journal'
import { LocusError, errorKindOf, exitCodeOfError } from '@locus/outcome'
import { RuntimeInputError } from '@locus/runtime'
import { CliError } from './cli-error.js'
import { type CliIo, processIo } from './cli-io.js'
import { EXIT_CODES } from './exit-codes.js'
import { createProgram } from './program.js'
import { asStorageError } from './storage-error.js'

/** Commander's ways of ending that are not mistakes: help and version were asked for. */
const COMMANDER_SUCCESS = new Set(['commander.helpDisplayed', 'commander.version'])

/** Errors whose message is the whole story: a registered code the caller can act on. */
function isReportedError(error: unknown): error is LocusError {
  return CliError.isInstance(error) || RuntimeInputError.isInstance(error) || RunIdError.isInstance(error) || (LocusError.isInstance(error) && errorKindOf(error) !== 'internal')
}

/** Prints an error the way `locus` promises: one clear message, a stack only with `--verbose`. */
function reportError(given: unknown, io: CliIo, verbose: boolean, command: string | undefined): number {
  if (given instanceof CommanderError) {
    // Commander has already printed its message (with "Did you mean ...?").
    return COMMANDER_SUCCESS.has(given.code) || given.exitCode === 0 ? EXIT_CODES.completed : EXIT_CODES.usage
  }
  const error = asStorageError(given) ?? given
  const code = describeError(error, io, verbose)
  // `locus replay` exits 1 only for a replay that diverged; anything that stopped it is 2, so CI never reads it as a divergence.
  return command === 'replay' && code === EXIT_CODES.failed ? EXIT_CODES.usage : code
}

function describeError(error: unknown, io: CliIo, verbose: boolean): number {
  if (isReportedError(error)) {
    io.stderr.write(`locus: ${error.message}\n`)
    if (verbose && error.stack !== undefined) io.stderr.write(`${error.stack}\n`)
    // One table for every package's codes: 2 for what the caller can fix, 1 for work that failed, 130 for a cancellation.
    return exitCodeOfError(error)
  }
  const message = error instanceof Error ? error.message : String(error)
  io.stderr.write(`locus: unexpected error: ${message}\n`)
  if (verbose && error instanceof Error && error.stack !== undefined) io.stderr.write(`${error.stack}\n`)
  else io.stderr.write('locus: run again with --verbose for the stack trace.\n')
  return EXIT_CODES.failed
}

/**
 * Runs `locus` with the given arguments (without `node` and the script) and
 * resolves to the exit code: 0 completed, 1 failed, 2 usage or input error,
 * 130 cancelled. It never calls `process.exit` itself, except on a second Ctrl-C.
 *
 * @example
 * ```ts
 * const code = await runCli(['run', 'triage.mts', '--host', 'scripted', '--fixtures', 'triage.fixtures.json'])
 * process.exitCode = code
 * ```
 */
export async function runCli(args: readonly string[], io: CliIo = processIo()): Promise<number> {
  let exitCode: number = EXIT_CODES.completed
  const program = createProgram(io, (code) => {
    exitCode = code
  })
  if (args.length === 0) {
    program.outputHelp({ error: true })
    return EXIT_CODES.usage
  }
  try {
    await program.parseAsync([...args], { from: 'user' })
    return exitCode
  } catch (error) {
    return reportError(error, io, args.includes('--verbose'), args[0])
  }
}
