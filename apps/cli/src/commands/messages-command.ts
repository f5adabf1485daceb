import { validateRunId } from '@locus/journal'
import { createRuntime } from '@locus/runtime'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { openRunStore } from '../open-run-store.js'
import { type ServerFlags, withServer } from './remote.js'
import { checkingWorkflow } from './resolve-command.js'

/** The flags of `locus signal`, `locus update` and `locus query`. */
export interface MessageFlags extends ServerFlags {
  readonly data?: string | undefined
  readonly runsDir?: string | undefined
  readonly databaseUrl?: string | undefined
  /** `--workflow <file>`: the workflow that declares the message (default: the file the run recorded). */
  readonly workflow?: string | undefined
  /** `locus update --wait <seconds>`: how long to wait for the handler (default 30). */
  readonly wait?: string | undefined
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

function waitSecondsOf(flags: MessageFlags): number {
  if (flags.wait === undefined) return 30
  const seconds = Number(flags.wait)
  if (!Number.isFinite(seconds) || seconds < 0) throw new CliError('CLI_USAGE', `--wait takes seconds (a number, 0 or more), not "${flags.wait}".`)
  return seconds
}

/**
 * `locus update <runId> <name> --data '<json>'`: sends an update the run's
 * workflow declares and waits (`--wait`, seconds) for its handler: prints
 * the result as JSON, or the updateId when the wait ran out. A rejected input
 * writes nothing to the journal (an audit record is kept) and exits 2.
 */
export async function updateCommand(runId: string, name: string, flags: MessageFlags, io: CliIo): Promise<ExitCode> {
  validateRunId(runId)
  const input = dataOf(flags)
  const waitSeconds = waitSecondsOf(flags)
  if (flags.server !== undefined) {
    return withServer(flags, io, async (client) => {
      const answer = await client.update(runId, name, input, { wait: waitSeconds })
      if ('result' in answer) {
        io.stdout.write(`${JSON.stringify(answer.result)}\n`)
        return EXIT_CODES.completed
      }
      io.stderr.write(`update ${name} (${answer.updateId}) accepted by ${runId}; its handler had not finished after ${String(waitSeconds)}s (the journal's update_completed will carry the result)\n`)
      return EXIT_CODES.completed
    })
  }
  const outcome = await withRuntime(runId, flags, io, (runtime) => runtime.update(runId, name, input, { from: 'cli', via: 'cli' }, { waitMs: waitSeconds * 1000 }))
  switch (outcome.status) {
    case 'completed':
      io.stdout.write(`${JSON.stringify(outcome.result)}\n`)
      return EXIT_CODES.completed
    case 'accepted':
      io.stderr.write(`update ${name} (${outcome.updateId}) kept for ${runId}; the process executing the run had not finished it after ${String(waitSeconds)}s (the journal's update_completed will carry the result)\n`)
      return EXIT_CODES.completed
    case 'invalid':
      throw new CliError('CLI_INPUT_INVALID', `--data does not fit update "${name}": ${outcome.issues.join('; ')}. Nothing was journaled (audit record ${outcome.updateId}).`)
    case 'rejected':
      throw new CliError('CLI_INPUT_INVALID', `update "${name}" was rejected: ${outcome.issues.join('; ')}. Nothing was journaled (audit record ${outcome.updateId}).`)
    case 'failed':
      throw new CliError('CLI_USAGE', `update "${name}" (${outcome.updateId}) failed: ${outcome.error}`)
    default:
      throw new CliError('CLI_USAGE', outcome.message)
  }
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
