import { validateRunId } from '@locus/journal'
import { createRuntime } from '@locus/runtime'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { openRunStore } from '../open-run-store.js'
import { type ServerFlags, withServer } from './remote.js'
import { checkingWorkflow } from './resolve-command.js'

/** The flags of `locus signal` and `locus query`. */
export interface MessageFlags extends ServerFlags {
  readonly data?: string | undefined
  readonly runsDir?: string | undefined
  readonly databaseUrl?: string | undefined
  /** `--workflow <file>`: the workflow that declares the message (default: the file the run recorded). */
  readonly workflow?: string | undefined
}

function dataOf(flags: MessageFlags): unknown {
  if (flags.data === undefined) return null
  try {
    return JSON.parse(flags.data) as unknown
  } catch (error) {
    throw new CliError('CLI_INPUT_INVALID', `--data is not JSON: ${(error as Error).message}.`)
  }
}

/** Opens the run's store with its workflow (the one that declares its messages) registered. */
async function withRuntime<T>(runId: string, flags: MessageFlags, io: CliIo, use: (runtime: ReturnType<typeof createRuntime>) => Promise<T>): Promise<T> {
  const { store, close } = openRunStore(flags, io, { maxConnections: 1 })
  try {
    const workflow = await checkingWorkflow(store, runId, flags, io)
    if (workflow === undefined) throw new CliError('CLI_USAGE', `The workflow of run ${runId} could not be loaded, so its messages are unknown here; pass --workflow <file>.`)
    return await use(createRuntime({ store, workflows: [workflow] }))
  } finally {
    await close()
  }
}

/**
 * `locus signal <runId> <name> --data '<json>'`: sends a signal the run's
 * workflow declares; it is kept in the run's store (or sent to `--server`)
 * and journaled by the process executing the run.
 */
export async function signalCommand(runId: string, name: string, flags: MessageFlags, io: CliIo): Promise<ExitCode> {
  validateRunId(runId)
  const payload = dataOf(flags)
  if (flags.server !== undefined) {
    return withServer(flags, io, async (client) => {
      const sent = await client.signal(runId, name, payload)
      io.stdout.write(`signal ${name} sent to ${runId} (#${String(sent.signalSeq)})\n`)
      return EXIT_CODES.completed
    })
  }
  const outcome = await withRuntime(runId, flags, io, (runtime) => runtime.signal(runId, name, payload, { from: 'cli', via: 'cli' }))
  if (outcome.ok) {
    io.stdout.write(`signal ${name} sent to ${runId} (#${String(outcome.signalSeq)}); the process executing the run journals it${flags.databaseUrl === undefined ? '' : ', and a parked run is queued again'}\n`)
    return EXIT_CODES.completed
  }
  if (outcome.status === 'invalid') throw new CliError('CLI_INPUT_INVALID', `--data does not fit signal "${name}": ${outcome.issues.join('; ')}. Nothing was sent.`)
  throw new CliError('CLI_USAGE', outcome.message)
}

/** `locus query <runId> <name>`: answers a query the run's workflow declares, from its journal alone. */
export async function queryCommand(runId: string, name: string, flags: MessageFlags, io: CliIo): Promise<ExitCode> {
  validateRunId(runId)
  if (flags.server !== undefined) {
    return withServer(flags, io, async (client) => {
      io.stdout.write(`${JSON.stringify((await client.query(runId, name)).result)}\n`)
      return EXIT_CODES.completed
    })
  }
  const outcome = await withRuntime(runId, flags, io, (runtime) => runtime.query(runId, name))
  if (!outcome.ok) throw new CliError('CLI_USAGE', outcome.message)
  io.stdout.write(`${JSON.stringify(outcome.result)}\n`)
  return EXIT_CODES.completed
}
