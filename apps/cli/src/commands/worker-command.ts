import { type OutcomeStore, openOutcomeStore } from '@locus/partial'
import { createDispatchRuntime, isConnectionError, migrateDispatch, startRunWorker } from '@locus/store-postgres'
import { holdSchedules } from './hold-schedules.js'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { createHost, type HostFlags } from '../create-host.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { loadWorkflows } from './load-workflows.js'
import { budgetsFromFlags } from './run-flags.js'
import { loadPrices } from '../load-prices.js'

/** The flags of `locus worker`. */
export interface WorkerFlags extends HostFlags {
  readonly databaseUrl?: string | undefined
  readonly workflows?: readonly string[] | undefined
  readonly concurrency?: number | undefined
  readonly leaseMs?: number | undefined
  /** `--max-agents`, `--deadline`: budgets of the runs it executes, under each run's own. */
  readonly maxAgents?: number | undefined
  readonly deadline?: number | undefined
  /** `--retry-budget`: the retry budget of a run that recorded none. */
  readonly retryBudget?: number | undefined
  /** `--prices <file>`: prices per model over the shipped catalogue, for the runs it executes. */
  readonly prices?: string | undefined
  /** `--max-cost <usd>`: the money budget of a run that gives none of its own. */
  readonly maxCost?: string | undefined
  /** `--allow-unpriced`: a run with a money budget starts although a model has no price. */
  readonly allowUnpriced?: boolean | undefined
}

function databaseUrlOf(flags: { readonly databaseUrl?: string | undefined }, io: CliIo): string {
  const url = flags.databaseUrl ?? io.env.LOCUS_DATABASE_URL
  if (url === undefined || url === '') throw new CliError('CLI_USAGE', 'Pass --database-url postgres://... (or set LOCUS_DATABASE_URL).')
  return url
}

/**
 * The outcome store on the worker's database, opened (and migrated) at the
 * first run that ends rather than at start: the worker starts while
 * PostgreSQL is still away and waits for it, and a store that failed to open
 * is tried again at the next run.
 */
function outcomesOn(connectionString: string, cwd: string): OutcomeStore {
  let opening: Promise<OutcomeStore> | undefined
  const opened = (): Promise<OutcomeStore> => {
    opening ??= openOutcomeStore({ runsDir: cwd, databaseUrl: connectionString }).catch((error: unknown) => {
      opening = undefined
      throw error
    })
    return opening
  }
  return {
    kind: 'postgres',
    migrate: async () => (await opened()).migrate(),
    recordRun: async (run) => (await opened()).recordRun(run),
    recordRuns: async (runs) => (await opened()).recordRuns(runs),
    recordGaps: async (runId, gaps) => (await opened()).recordGaps(runId, gaps),
    outcomeReport: async (options) => (await opened()).outcomeReport(options),
    gapsReport: async (options) => (await opened()).gapsReport(options),
    costReport: async (options) => (await opened()).costReport(options),
    dailyReport: async (options) => (await opened()).dailyReport(options),
    async close() {
      const store = await opening?.catch(() => undefined)
      await store?.close()
    },
  }
}

/**
 * Runs queued runs of the given workflows from PostgreSQL until SIGTERM or
 * Ctrl-C (docs/scaling.md): several workers on several machines share the
 * runs, and one resumes the runs of another that died.
 */
export async function workerCommand(flags: WorkerFlags, io: CliIo): Promise<ExitCode> {
  const connectionString = databaseUrlOf(flags, io)
  const { workflows, paths, schedules } = await loadWorkflows(flags.workflows ?? [], io.cwd)
  const chosen = await createHost(flags, { cwd: io.cwd, env: io.env, workflowPath: paths[0] ?? io.cwd })
  // The worker retries every connection by itself; a connection error that still escapes (a library's
  // promise nobody awaits) is said once and does not end the process. Anything else still does.
  let saidLost = false
  const onRejection = (reason: unknown): void => {
    if (!isConnectionError(reason)) throw reason
    if (saidLost) return
    saidLost = true
    io.stderr.write(`locus: worker lost PostgreSQL (${reason instanceof Error ? reason.message : String(reason)}); it keeps running and reconnects\n`)
  }
  process.on('unhandledRejection', onRejection)
  const budgets = budgetsFromFlags({ maxAgents: flags.maxAgents, deadline: flags.deadline, maxCost: flags.maxCost })
  // Every run a worker executes is priced, as `locus run` prices its own; a queued run's budgets.maxCostUsd needs it.
  const prices = await loadPrices(flags.prices, io.cwd)
  // Outcome metrics go to the same database, where `locus report` (with LOCUS_DATABASE_URL) reads them.
  const metrics = outcomesOn(connectionString, io.cwd)
  const worker = await startRunWorker({
    connectionString,
    workflows,
    ...(chosen.host === undefined ? {} : { host: chosen.host }),
    ...(flags.concurrency === undefined ? {} : { concurrency: flags.concurrency }),
    ...(flags.leaseMs === undefined ? {} : { leaseMs: flags.leaseMs }),
    defaults: {
      prices,
      ...(budgets === undefined ? {} : { budgets }),
      ...(flags.retryBudget === undefined ? {} : { retryBudget: flags.retryBudget }),
      ...(flags.allowUnpriced === true ? { allowUnpriced: true } : {}),
    },
    metrics,
    onMetricsError: (runId, error) => {
      io.stderr.write(`locus: warning: worker could not record the outcome metrics of run ${runId} in PostgreSQL (${error instanceof Error ? error.message : String(error)}); the run itself ended as its journal says\n`)
    },
    // One line per outage: what the worker waits for. It never exits on a connection error.
    onWaiting: (message) => {
      io.stderr.write(`locus: worker ${message}\n`)
    },
  })
  io.stdout.write(`locus: worker running ${workflows.map((workflow) => workflow.name).join(', ')} from PostgreSQL (host: ${chosen.description})\n`)
  // Schedules a --workflows module exported: their slots queue runs as POST /v1/runs would, for any worker to take.
  const dispatching = schedules.length === 0 ? undefined : await createDispatchRuntime({ connectionString, workflows, maxConnections: 2 })
  const stopSchedules = dispatching === undefined ? () => Promise.resolve() : await holdSchedules({ schedules, workflows, runtime: dispatching, store: dispatching.store, io })
  await new Promise<void>((resolve) => {
    const stop = io.onInterrupt(() => {
      stop()
      resolve()
    })
    process.once('SIGTERM', () => {
      stop()
      resolve()
    })
  })
  io.stdout.write('locus: worker stopping; its runs are handed over to another worker, which resumes them\n')
  await stopSchedules()
  await dispatching?.close()
  await worker.stop()
  await metrics.close()
  process.removeListener('unhandledRejection', onRejection)
  return EXIT_CODES.completed
}

/** Applies the store's and graphile-worker's migrations; safe to run from several places at once. */
export async function dbMigrateCommand(flags: { readonly databaseUrl?: string | undefined }, io: CliIo): Promise<ExitCode> {
  await migrateDispatch(databaseUrlOf(flags, io))
  io.stdout.write('locus: database migrated (Locus tables and graphile-worker)\n')
  return EXIT_CODES.completed
}
