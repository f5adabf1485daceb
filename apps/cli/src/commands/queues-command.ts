import type { QueueSnapshot } from '@locus/runtime'
import { readQueues } from '@locus/store-postgres'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { formatDuration } from '../format-duration.js'
import { formatTable } from '../format-table.js'
import { styleFor, type Style } from '../style.js'

/** Flags of `locus queues`. */
export interface QueuesFlags {
  readonly server?: string | undefined
  readonly apiKey?: string | undefined
  readonly databaseUrl?: string | undefined
  readonly json?: boolean | undefined
}

/** Where `locus queues` reads: a server's `GET /v1/queues`, or the admission tables of a PostgreSQL database. */
export interface QueueSources {
  fromServer(flags: QueuesFlags, io: CliIo): Promise<readonly QueueSnapshot[]>
  fromDatabase(url: string): Promise<readonly QueueSnapshot[]>
}

/** What a run's waits look like where the CLI shows a run (`locus show`), from its `queued` and `rate_wait` lines. */
export interface WaitsOfRun {
  readonly queued: { readonly keys: readonly string[]; readonly reason: string; readonly waitedMs: number } | null | undefined
  readonly rate: { readonly count: number; readonly waitedMs: number } | undefined
}

/** The lines `locus show` prints for a run's waits; none when it waited for nothing. */
export function formatWaits(waits: WaitsOfRun, style: Style): string[] {
  const out: string[] = []
  const label = (text: string): string => `  ${style.dim(text.padEnd(10))}`
  if (waits.queued !== null && waits.queued !== undefined) {
    const keys = waits.queued.keys.length === 0 ? '' : ` on ${waits.queued.keys.join(', ')}`
    out.push(`${label('queued:')}${formatDuration(waits.queued.waitedMs)} before it started (${waits.queued.reason}${keys})`)
  }
  if (waits.rate !== undefined && waits.rate.count > 0) {
    out.push(`${label('rate:')}${String(waits.rate.count)} LLM request${waits.rate.count === 1 ? '' : 's'} waited ${formatDuration(waits.rate.waitedMs)} for rate limits`)
  }
  return out
}

/** The table `locus queues` prints. */
export function formatQueues(queues: readonly QueueSnapshot[], style: Style): string {
  const rows = [['KEY', 'RUNNING', 'WAITING', 'OLDEST WAIT'].map((cell) => style.dim(cell))]
  for (const queue of queues) rows.push([queue.key, String(queue.running), String(queue.waiting), queue.waiting === 0 ? '-' : formatDuration(queue.oldestWaitMs)])
  return formatTable(rows)
}

/**
 * `locus queues`: per concurrency key (and shared rate limit, `rate:...`),
 * runs running and waiting and the oldest wait, from a server (`--server`) or
 * from the PostgreSQL workers' admission tables (`--database-url`). A runs
 * directory keeps no queue: runs wait in the process that starts them.
 */
export async function queuesCommand(flags: QueuesFlags, io: CliIo, sources: QueueSources): Promise<ExitCode> {
  const databaseUrl = flags.databaseUrl ?? (flags.server === undefined ? io.env.LOCUS_DATABASE_URL : undefined)
  if (flags.server === undefined && (databaseUrl === undefined || databaseUrl === '')) {
    throw new CliError(
      'CLI_USAGE',
      'locus queues needs --server <url> (a Locus server) or --database-url <url> (PostgreSQL workers): runs of a runs directory wait in the process that starts them, which `GET /v1/queues` of `locus serve` shows.',
    )
  }
  const queues = flags.server === undefined ? await sources.fromDatabase(databaseUrl as string) : await sources.fromServer(flags, io)
  if (flags.json === true) {
    for (const queue of queues) io.stdout.write(`${JSON.stringify({ type: 'queue', ...queue })}\n`)
    return EXIT_CODES.completed
  }
  if (queues.length === 0) {
    io.stdout.write('No run holds or waits for a concurrency key, and no rate limit is declared.\n')
    return EXIT_CODES.completed
  }
  io.stdout.write(`${formatQueues(queues, styleFor(io.stdout, io.env))}\n`)
  return EXIT_CODES.completed
}

/** The sources `locus queues` reads in the CLI: a server through @locus/client, or a PostgreSQL database's admission tables. */
export function defaultQueueSources(fromServer: QueueSources['fromServer']): QueueSources {
  return {
    fromServer,
    async fromDatabase(url) {
      try {
        return await readQueues(url)
      } catch (error) {
        // undefined_table: a database the workers' migrations were never run against.
        if ((error as { code?: unknown } | null)?.code === '42P01') {
          throw new CliError('CLI_USAGE', 'The database --database-url names holds no Locus queues: check the URL, or run `locus db migrate` against it first.')
        }
        throw error
      }
    },
  }
}
