import { closeMcpToolSources } from '@locus/mcp'
import { type OutcomeStore, openOutcomeStore } from '@locus/partial'
import { createTriggerQueue } from '@locus/protocol'
import { type Runtime, createRuntime } from '@locus/runtime'
import { createDispatchRuntime } from '@locus/store-postgres'
import { CliError } from '../cli-error.js'
import { SERVER_OPTIONS_INVALID, ServerOptionsError, startServer } from '@locus/server'
import type { CliIo } from '../cli-io.js'
import { createHost, type HostFlags } from '../create-host.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { plural } from '../format-summary.js'
import { resolveRunsDir } from '../runs-dir.js'
import { describeMetrics } from '../open-metrics.js'
import { startOtelExport } from '../otel-export.js'
import { loadWorkflows } from './load-workflows.js'
import { holdSchedules } from './hold-schedules.js'
import { type RunStore, createFileRunStore } from '@locus/store'
import { checkBudgetPrices } from './run-command.js'
import { loadPrices } from '../load-prices.js'

/** The flags of `locus serve`. */
export interface ServeFlags extends Omit<HostFlags, 'host' | 'modelHost'> {
  readonly port?: number | undefined
  /** The address to listen on (the issue's `--host`). */
  readonly host?: string | undefined
  /** Where agent() calls run, as `locus run --host` says it: scripted, openai-compatible, openai, anthropic, google, none. */
  readonly modelHost?: string | undefined
  readonly workflows?: readonly string[] | undefined
  readonly runsDir?: string | undefined
  /** `--otel`: export every run's spans over OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  readonly otel?: boolean | undefined
  /** Serve the runs of a PostgreSQL database; runs execute on `locus worker` processes. */
  readonly databaseUrl?: string | undefined
  /** `--allow-origin` (repeatable): web origins whose pages may call the API; CORS answers for exactly these. */
  readonly allowOrigin?: readonly string[] | undefined
  /** `--allow-host` (repeatable): host names clients may address the server by, besides the address it listens on. */
  readonly allowHost?: readonly string[] | undefined
  /** `--shutdown-grace`: how long working runs may go on at shutdown before they are cancelled, in ms. @default 10_000 */
  readonly shutdownGrace?: number | undefined
  /** `--prices <file>`: prices per model over the shipped catalogue, for every run the server starts. */
  readonly prices?: string | undefined
  /** `--max-cost <usd>`: the money budget of a run started over HTTP that gives none of its own. */
  readonly maxCost?: string | undefined
  /** `--allow-unpriced`: runs with a money budget start although a model has no price. */
  readonly allowUnpriced?: boolean | undefined
  /** `--callback-secret`: sign callback URLs for deferrals (over `LOCUS_CALLBACK_SECRET`). */
  readonly callbackSecret?: string | undefined
}

/** Where the server's keys come from, and what `--api-key` is on `locus serve` (the model host's key, never the server's). */
const SERVER_KEYS_HINT =
  "The server's keys come from LOCUS_API_KEYS or LOCUS_API_KEYS_FILE; clients send one as `Authorization: Bearer <key>` or with `--server <url> --api-key <key>`. On `locus serve`, `--api-key` is the model host's key, not the server's."

/** How long `locus serve` and `locus mcp` let working runs go on when they stop, unless `--shutdown-grace` says otherwise. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000

/** How long a run under `locus serve` (file store) waits only on sleep() timers before it is parked. */
const SLEEP_PARK_AFTER_MS = 1000

/**
 * Starts the HTTP server over the given workflows and the runs directory,
 * prints its URL, and shuts down gracefully on SIGTERM or SIGINT (running
 * calls settle; runs left unfinished are journaled so `resume` continues them).
 */
export async function serveCommand(flags: ServeFlags, io: CliIo): Promise<ExitCode> {
  const { workflows, paths, schedules } = await loadWorkflows(flags.workflows ?? [], io.cwd)
  const databaseUrl = flags.databaseUrl ?? (flags.runsDir === undefined ? io.env.LOCUS_DATABASE_URL : undefined)
  // Remote tools reach workers that poll this server (GET /v1/worker/triggers) through one queue.
  const workers = createTriggerQueue()
  const otel = flags.otel === true ? startOtelExport(io.env) : undefined
  let plain: Runtime
  let where: string
  let closeRuntime = (): Promise<void> => Promise.resolve()
  let executesRuns = true
  // Where the schedules a --workflows module exported keep their slot records: the runs' own store.
  let scheduleStore: RunStore
  // Where runs record their outcomes and the inspector's /report reads them; a store that cannot open is reported, and the server goes on without it.
  let outcomes: OutcomeStore | undefined
  const openOutcomes = async (runsDir: string, url: string | undefined, where: string): Promise<void> => {
    try {
      outcomes = await openOutcomeStore({ runsDir, databaseUrl: url })
    } catch (error) {
      io.stderr.write(`locus: warning: outcome metrics are off for this server: ${where} could not be opened (${(error as Error).message}).\n`)
    }
  }
  if (databaseUrl !== undefined && databaseUrl !== '') {
    if (flags.runsDir !== undefined) throw new CliError('CLI_USAGE', 'Pass --runs-dir or --database-url, not both: the server serves the runs of one store.')
    const hostFlags = [
      ...(flags.modelHost === undefined ? [] : ['--model-host']),
      ...(flags.turnTimeout === undefined ? [] : ['--turn-timeout']),
      ...(flags.turnIdle === undefined ? [] : ['--turn-idle']),
      ...(flags.stream === false ? ['--no-stream'] : []),
    ]
    if (hostFlags.length > 0) throw new CliError('CLI_USAGE', `${hostFlags.join(', ')} ${hostFlags.length === 1 ? 'has' : 'have'} no effect with --database-url: runs execute on \`locus worker\` processes, so give the host to them.`)
    const moneyFlags = [...(flags.prices === undefined ? [] : ['--prices']), ...(flags.maxCost === undefined ? [] : ['--max-cost']), ...(flags.allowUnpriced === true ? ['--allow-unpriced'] : [])]
    if (moneyFlags.length > 0) {
      throw new CliError(
        'CLI_USAGE',
        `${moneyFlags.join(', ')} ${moneyFlags.length === 1 ? 'has' : 'have'} no effect with --database-url: runs execute on \`locus worker\` processes, which price them; a run's own budgets.maxCostUsd (POST /v1/runs) travels with it to the worker.`,
      )
    }
    if (!/^postgres(ql)?:\/\//.test(databaseUrl)) throw new CliError('CLI_USAGE', '--database-url must be a postgres:// or postgresql:// URL.')
    const dispatching = await createDispatchRuntime({ connectionString: databaseUrl, workflows })
    // Workers record outcomes in the runs database; the server reads them there.
    await openOutcomes(io.cwd, databaseUrl, 'the PostgreSQL outcome store')
    plain = dispatching
    scheduleStore = dispatching.store
    executesRuns = false
    closeRuntime = () => dispatching.close()
    where = 'runs execute on locus worker processes over PostgreSQL'
  } else {
    const runsDir = resolveRunsDir(flags.runsDir, io)
    const chosen = await createHost({ ...flags, host: undefined }, { cwd: io.cwd, env: io.env, workflowPath: paths[0] ?? io.cwd })
    // Where `locus run` records: <runs dir>/outcomes.sqlite, or PostgreSQL with LOCUS_DATABASE_URL.
    await openOutcomes(runsDir, io.env.LOCUS_DATABASE_URL, describeMetrics(runsDir, io.env))
    const prices = await loadPrices(flags.prices, io.cwd)
    const money = {
      prices,
      ...(flags.maxCost === undefined ? {} : { budgets: { maxCostUsd: flags.maxCost } }),
      ...(flags.allowUnpriced === true ? { allowUnpriced: true } : {}),
    }
    // A default budget that no workflow could keep (a model with no price) stops the server before it listens.
    if (flags.maxCost !== undefined) for (const workflow of workflows) checkBudgetPrices(workflow, { ...money, ...(chosen.host === undefined ? {} : { host: chosen.host }) })
    scheduleStore = createFileRunStore(runsDir)
    plain = createRuntime({
      workflows,
      runsDir,
      defaults: { worker: workers, ...money, ...(outcomes === undefined ? {} : { metrics: outcomes }) },
      ...(chosen.host === undefined ? {} : { host: chosen.host }),
    })
    where = `host: ${chosen.description}`
  }
  const runtime = otel === undefined ? plain : otel.traceRuntime(plain)
  let server
  try {
    server = await startServer({
      runtime,
      schedules: scheduleStore.schedules,
      workers,
      port: flags.port ?? 4477,
      host: flags.host ?? '127.0.0.1',
      env: io.env,
      allowedOrigins: flags.allowOrigin,
      allowedHosts: flags.allowHost,
      // Over LOCUS_CALLBACK_SECRET, which startServer reads from env when this is not given.
      ...(flags.callbackSecret === undefined ? {} : { callbackSecret: flags.callbackSecret }),
      shutdownGraceMs: flags.shutdownGrace ?? DEFAULT_SHUTDOWN_GRACE_MS,
      outcomes,
      // On PostgreSQL the workers execute runs and park the waiting ones themselves.
      resumeSuspended: executesRuns,
      // A run that only sleeps is parked after a second and woken at its due time, also after a restart.
      ...(executesRuns ? { parkSleepingAfterMs: SLEEP_PARK_AFTER_MS } : {}),
      onResumed: (report) => {
        if (report.resumed.length > 0) io.stdout.write(`locus: resumed ${plural(report.resumed.length, 'run')} a previous server suspended on deferrals: ${report.resumed.map((handle) => handle.runId).join(', ')}\n`)
        for (const skipped of report.skipped) io.stderr.write(`locus: warning: suspended run ${skipped.runId} was not resumed: ${skipped.reason}\n`)
      },
      onDrained: (report) => {
        if (report.suspended.length > 0) io.stdout.write(`locus: suspended ${plural(report.suspended.length, 'run')} waiting on deferrals, which stay open; the next locus serve on this store resumes them: ${report.suspended.join(', ')}\n`)
        if (report.cancelled.length > 0) io.stdout.write(`locus: cancelled ${plural(report.cancelled.length, 'run')} still working after the grace period; locus resume continues them: ${report.cancelled.join(', ')}\n`)
      },
    })
  } catch (error) {
    await closeRuntime()
    await outcomes?.close()
    // Bad keys, a bad --allow-origin or --allow-host, a public address without keys: SERVER_OPTIONS_INVALID, a
    // registered usage code, so the user's to fix (exit 2) from any copy of @locus/server.
    if (ServerOptionsError.isInstance(error) && error.code === SERVER_OPTIONS_INVALID && /API key/i.test(error.message)) {
      throw new ServerOptionsError(`${error.message} ${SERVER_KEYS_HINT}`)
    }
    throw error
  }
  io.stdout.write(`locus: serving ${workflows.map((workflow) => workflow.name).join(', ')} at ${server.url} (${where})\n`)
  let stopSchedules: () => Promise<void>
  try {
    stopSchedules = await holdSchedules({ schedules, workflows, runtime, store: scheduleStore, io })
  } catch (error) {
    await server.close()
    await closeRuntime()
    await outcomes?.close()
    throw error
  }
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
  io.stdout.write('locus: shutting down; runs waiting on deferrals are suspended, others are cancelled after the grace period\n')
  await stopSchedules()
  await server.close()
  await workers.close()
  await closeMcpToolSources()
  await closeRuntime()
  await outcomes?.close()
  await otel?.shutdown().catch((error: unknown) => {
    io.stderr.write(`locus: warning: traces could not be sent to ${otel.url}: ${error instanceof Error ? error.message : String(error)}\n`)
  })
  return EXIT_CODES.completed
}
