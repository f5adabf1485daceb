import { type JournalLine, createRunView } from '@locus/journal'
import { type LocusClient, LocusApiError, type RunBudgets, createLocusClient } from '@locus/client'
import { summarizeRunView } from '@locus/runtime'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { formatJournalLine } from '../format-journal-line.js'
import { formatSummary } from '../format-summary.js'
import { formatTable } from '../format-table.js'
import { chooseProgressMode, createProgressReporter } from '../progress/progress-reporter.js'
import { readWorkflowInput } from '../read-workflow-input.js'
import { styleFor } from '../style.js'
import { finishRun } from './finish-run.js'
import { formatWaits } from './queues-command.js'
import { checkTokensFlags, parseLineTypes } from './journal-command.js'
import { type RunFlags, showsTokens } from './run-flags.js'
import { type TokenPrinter, createTokenPrinter } from '../token-printer.js'

// `--server <url>`: run, show, ls, cancel, resolve and journal through a Locus
// server's HTTP API (@locus/client) instead of the local runs directory.

/** The flags every command takes in server mode. */
export interface ServerFlags {
  /** The server's URL, e.g. http://127.0.0.1:4477. */
  readonly server?: string | undefined
  /** Its API key (or $LOCUS_API_KEY). */
  readonly apiKey?: string | undefined
  readonly runsDir?: string | undefined
}

/** Flags of `locus run` that need a local runtime, with what to do instead. */
const LOCAL_ONLY_RUN_FLAGS: readonly (readonly [keyof RunFlags, string])[] = [
  ['runsDir', '--runs-dir'],
  ['runId', '--run-id'],
  ['host', '--host'],
  ['modelHost', '--model-host'],
  ['turnTimeout', '--turn-timeout'],
  ['turnIdle', '--turn-idle'],
  ['fixtures', '--fixtures'],
  ['baseUrl', '--base-url'],
  ['model', '--model'],
  ['worker', '--worker'],
  ['concurrency', '--concurrency'],
  ['durability', '--durability'],
  ['retryBudget', '--retry-budget'],
  ['jitter', '--jitter'],
]

function clientOf(flags: ServerFlags, io: CliIo): LocusClient {
  if (flags.runsDir !== undefined) {
    throw new CliError('CLI_USAGE', '--runs-dir and --server do not go together: with --server the runs live on the server. Drop one of them.')
  }
  const server = flags.server ?? ''
  try {
    return createLocusClient({ baseUrl: server, apiKey: flags.apiKey ?? io.env.LOCUS_API_KEY })
  } catch (error) {
    throw new CliError('CLI_USAGE', `--server ${(error as Error).message}`, { cause: error })
  }
}

/**
 * What the person at the keyboard sees when the server refuses: its message
 * and issues, exit 2 for a request they can fix (4xx, an unreachable or
 * wrong URL), exit 1 for the server's own fault.
 */
function asCliError(error: unknown, server: string): unknown {
  if (!LocusApiError.isInstance(error)) return error
  const issues = error.issues.length > 0 ? `\n${error.issues.map((issue) => `  ${issue}`).join('\n')}` : ''
  if (error.code === 'unreachable' || error.code === 'unexpected_response') {
    return new CliError('CLI_USAGE', `${error.message} (--server ${server})`, { cause: error })
  }
  if (error.status >= 400 && error.status < 500) {
    const hint = error.code === 'unauthorized' ? '\nPass the server\'s key with --api-key or $LOCUS_API_KEY.' : ''
    return new CliError(error.code === 'invalid_request' ? 'CLI_INPUT_INVALID' : 'CLI_USAGE', `the server answered ${error.code}: ${error.message}${issues}${hint}`, { cause: error })
  }
  return new Error(`the server answered ${error.status} ${error.code}: ${error.message}`, { cause: error })
}

export async function withServer<T>(flags: ServerFlags, io: CliIo, work: (client: LocusClient) => Promise<T>): Promise<T> {
  const client = clientOf(flags, io)
  try {
    return await work(client)
  } catch (error) {
    throw asCliError(error, client.baseUrl)
  }
}

function budgetsOf(flags: RunFlags): RunBudgets | undefined {
  const perCall = {
    ...(flags.maxToolCalls === undefined ? {} : { maxToolCalls: flags.maxToolCalls }),
    ...(flags.maxOutputTokens === undefined ? {} : { maxOutputTokens: flags.maxOutputTokens }),
    ...(flags.maxAnswerChars === undefined ? {} : { maxAnswerChars: flags.maxAnswerChars }),
  }
  const budgets = {
    ...(flags.maxAgents === undefined ? {} : { maxTotalAgentInvocations: flags.maxAgents }),
    ...(flags.deadline === undefined ? {} : { deadlineMs: flags.deadline }),
    ...(Object.keys(perCall).length === 0 ? {} : { perCall }),
  }
  return Object.keys(budgets).length === 0 ? undefined : budgets
}

/** Where a person finds a run's result on the server. */
const resultUrl = (client: LocusClient, runId: string): string => `${client.baseUrl}/v1/runs/${encodeURIComponent(runId)}/result`

/** The summary of `locus run` and `locus show`, folded from the lines the server sent, as local mode folds them. */
function summaryOf(client: LocusClient, lines: readonly JournalLine[]) {
  const view = createRunView()
  for (const line of lines) view.apply(line)
  const runId = view.runStart?.runId ?? ''
  // An absolute path that displayPath leaves as it is; the run header names the server.
  const path = `/v1/runs/${encodeURIComponent(runId)}/result`
  return summarizeRunView(view, { outputsReadme: path, resultPath: resultUrl(client, runId) })
}

/**
 * `locus run <workflow> --server <url>`: starts the named workflow on the
 * server, follows its event stream with the same progress output, and ends
 * with the same summary and exit code as a local run. Ctrl-C cancels the run
 * on the server and waits for its end.
 */
export async function remoteRun(workflow: string, flags: RunFlags & ServerFlags, io: CliIo): Promise<ExitCode> {
  const local = [...LOCAL_ONLY_RUN_FLAGS.filter(([name]) => flags[name] !== undefined).map(([, flag]) => flag), ...(flags.stream === false ? ['--no-stream'] : [])]
  if (local.length > 0 || flags.otel === true) {
    throw new CliError('CLI_USAGE', `${[...local, ...(flags.otel === true ? ['--otel'] : [])].join(', ')} configure a local run; with --server the server's runtime decides them. Drop them, or drop --server to run the file here.`)
  }
  const input = readWorkflowInput(flags, io.cwd)
  return withServer(flags, io, async (client) => {
    const budgets = budgetsOf(flags)
    const started = await client.startRun(workflow, {
      ...(input === undefined ? {} : { input }),
      ...(budgets === undefined ? {} : { budgets }),
      ...(flags.launchMode === undefined ? {} : { launchMode: flags.launchMode }),
    })
    const json = flags.json === true
    const style = styleFor(io.stdout, io.env)
    if (!json && flags.quiet !== true) io.stdout.write(style.dim(`locus: run ${started.runId} of ${workflow} on ${client.baseUrl}\n`))
    const mode = chooseProgressMode(flags, io.stdout)
    const reporter = createProgressReporter(mode === 'tree' && showsTokens(flags) ? 'plain' : mode, io.stdout, style, { server: client.baseUrl })
    const tokens = showsTokens(flags) ? followRemoteTokens(client, started.runId, createTokenPrinter(io.stderr, styleFor(io.stderr, io.env), { runId: started.runId }), io) : undefined
    const stop = io.onInterrupt(() => {
      io.stderr.write(`\nlocus: cancelling run ${started.runId} on the server...\n`)
      client.cancel(started.runId, { reason: 'interrupted from the terminal (Ctrl-C)' }).catch(() => undefined)
    })
    const lines: JournalLine[] = []
    try {
      for await (const line of client.events(started.runId, { execution: started.executionId })) {
        lines.push(line)
        reporter.onEvent(line)
      }
    } finally {
      stop()
      await tokens?.settle()
      reporter.finish()
    }
    const end = lines.at(-1)
    const disposition = end?.type === 'run_end' ? end.disposition : (await client.waitForResult(started.runId)).disposition
    return finishRun(io, summaryOf(client, lines), { disposition }, json)
  })
}

/** How long the token stream may take to end after the journal's run_end, before it is cut off. */
const TOKEN_SETTLE_MS = 5_000

/**
 * Follows a run's token stream on the server (`client.stream`) into a
 * printer until the server ends it (the run ended and everything was sent),
 * or `settle` gives up waiting for that.
 */
function followRemoteTokens(client: LocusClient, runId: string, printer: TokenPrinter, io: CliIo): { settle: () => Promise<void>; stop: () => void } {
  const controller = new AbortController()
  const done = (async () => {
    for await (const record of client.stream(runId, { signal: controller.signal })) printer.record(record)
  })()
    .catch((error: unknown) => {
      printer.finish()
      io.stderr.write(`locus: warning: the run's tokens could not be read from ${client.baseUrl}: ${error instanceof Error ? error.message : String(error)}\n`)
    })
    .finally(() => {
      printer.finish()
    })
  return {
    stop: () => {
      controller.abort()
    },
    async settle() {
      const timer = setTimeout(() => {
        controller.abort()
      }, TOKEN_SETTLE_MS)
      await done
      clearTimeout(timer)
    },
  }
}

/** `locus show <runId> --server <url>`: the run's summary from its journal on the server, or the server's JSON with `--json`. */
export async function remoteShow(runId: string, flags: ServerFlags & { readonly json?: boolean | undefined }, io: CliIo): Promise<ExitCode> {
  return withServer(flags, io, async (client) => {
    const run = await client.getRun(runId)
    if (flags.json === true) {
      io.stdout.write(`${JSON.stringify({ type: 'run', ...run })}\n`)
      return EXIT_CODES.completed
    }
    const style = styleFor(io.stdout, io.env)
    const out = [formatSummary(summaryOf(client, await client.journal(runId, { execution: run.executionId })), { cwd: io.cwd, style })]
    out.push('', `${style.dim('status:'.padEnd(10))}${run.status}${run.live ? ' (executing on the server)' : ''}`)
    if (run.waits !== undefined) out.push(...formatWaits(run.waits, style))
    if (run.executions.length > 1) {
      out.push('', style.bold('Executions:'))
      for (const execution of run.executions) out.push(`  ${execution.executionId.padEnd(16)} ${execution.kind.padEnd(7)} ${execution.status}`)
    }
    if (run.deferred.length > 0) {
      out.push('', style.bold('Waiting on:'))
      for (const deferral of run.deferred) out.push(`  ${deferral.deferredId} ${deferral.tool} ${JSON.stringify(deferral.args ?? null)}  (locus resolve ${runId} ${deferral.deferredId} --result '<json>' --server ${client.baseUrl})`)
    }
    io.stdout.write(`${out.join('\n')}\n`)
    return EXIT_CODES.completed
  })
}

/** `locus ls --server <url>`: the server's runs, newest first. */
export async function remoteLs(flags: ServerFlags & { readonly json?: boolean | undefined; readonly limit?: number | undefined }, io: CliIo): Promise<ExitCode> {
  return withServer(flags, io, async (client) => {
    const { runs } = await client.listRuns({ limit: Math.min(flags.limit ?? 20, 100) })
    if (flags.json === true) {
      for (const run of runs) io.stdout.write(`${JSON.stringify({ type: 'run', ...run })}\n`)
      return EXIT_CODES.completed
    }
    if (runs.length === 0) {
      io.stdout.write(`No runs on ${client.baseUrl} yet. Start one with \`locus run <workflow> --server ${client.baseUrl}\`.\n`)
      return EXIT_CODES.completed
    }
    const style = styleFor(io.stdout, io.env)
    const rows = [['RUN', 'WORKFLOW', 'STATUS', 'STARTED'].map((cell) => style.dim(cell))]
    for (const run of runs) rows.push([run.runId, run.workflow, run.status, run.startedAt === null ? '-' : run.startedAt.replace('T', ' ').slice(0, 19)])
    io.stdout.write(`${formatTable(rows)}\n`)
    return EXIT_CODES.completed
  })
}

/** `locus cancel <runId> --server <url>`: asks the server to cancel a run it executes. */
export async function remoteCancel(runId: string, flags: ServerFlags & { readonly reason?: string | undefined }, io: CliIo): Promise<ExitCode> {
  if (flags.server === undefined) {
    throw new CliError('CLI_USAGE', 'locus cancel needs --server <url>: it cancels a run a Locus server executes. A local run stops with Ctrl-C in the shell running it.')
  }
  return withServer(flags, io, async (client) => {
    const answer = await client.cancel(runId, flags.reason === undefined ? {} : { reason: flags.reason })
    io.stdout.write(`${runId} ${answer.status} (execution ${answer.executionId}); \`locus show ${runId} --server ${client.baseUrl}\` shows how it ends\n`)
    return EXIT_CODES.completed
  })
}

/** `locus resolve <runId> <deferredId> --server <url>`: answers a deferred tool through the server. */
export async function remoteResolve(
  runId: string,
  deferredId: string,
  flags: ServerFlags & { readonly result?: string | undefined; readonly reject?: string | undefined; readonly retryable?: boolean | undefined },
  io: CliIo,
): Promise<ExitCode> {
  if ((flags.result === undefined) === (flags.reject === undefined)) {
    throw new CliError('CLI_USAGE', 'Pass exactly one of --result \'<json>\' or --reject \'<message>\'.')
  }
  let result: unknown
  if (flags.result !== undefined) {
    try {
      result = JSON.parse(flags.result)
    } catch (error) {
      throw new CliError('CLI_INPUT_INVALID', `--result is not JSON: ${(error as Error).message}.`)
    }
  }
  return withServer(flags, io, async (client) => {
    const answer =
      flags.reject === undefined
        ? await client.resolveDeferred(runId, deferredId, result, { via: 'cli' })
        : await client.rejectDeferred(runId, deferredId, { error: flags.reject, ...(flags.retryable === true ? { retryable: true } : {}), via: 'cli' })
    io.stdout.write(`${deferredId} ${answer.status}\n`)
    return EXIT_CODES.completed
  })
}

/** `locus journal <runId> --server <url>`: the journal from the server; `--follow` reads the event stream until `run_end`. */
export async function remoteJournal(
  runId: string,
  flags: ServerFlags & { readonly json?: boolean | undefined; readonly type?: string | undefined; readonly follow?: boolean | undefined; readonly execution?: string | undefined; readonly tokens?: boolean | undefined; readonly databaseUrl?: string | undefined },
  io: CliIo,
): Promise<ExitCode> {
  if (flags.databaseUrl !== undefined) throw new CliError('CLI_USAGE', '--database-url and --server do not go together: with --server the runs live on the server. Drop one of them.')
  checkTokensFlags(flags)
  const types = parseLineTypes(flags.type)
  const wanted = flags.execution ?? 'latest'
  const execution = wanted === 'latest' ? undefined : wanted === 'root' ? runId : wanted
  const style = styleFor(io.stdout, io.env)
  let startedAt: number | undefined
  return withServer(flags, io, async (client) => {
    const printer = flags.tokens === true ? createTokenPrinter(io.stdout, style, { runId, json: flags.json }) : undefined
    const print = (line: JournalLine): void => {
      if (line.type === 'run_start') startedAt ??= Date.parse(line.ts)
      if (types !== undefined && !types.has(line.type)) return
      printer?.beforeLine()
      io.stdout.write(flags.json === true ? `${JSON.stringify(line)}\n` : `${formatJournalLine(line, startedAt, style, { server: client.baseUrl })}\n`)
    }
    if (flags.follow !== true) {
      for (const line of await client.journal(runId, execution === undefined ? {} : { execution })) print(line)
      return EXIT_CODES.completed
    }
    const controller = new AbortController()
    // The token stream follows the run across its executions, beside the journal's events.
    const tokens = printer === undefined ? undefined : followRemoteTokens(client, runId, printer, io)
    const stop = io.onInterrupt(() => {
      controller.abort()
      tokens?.stop()
    })
    try {
      let ended = false
      for await (const line of client.events(runId, { signal: controller.signal, ...(execution === undefined ? {} : { execution }) })) {
        print(line)
        if (line.type === 'run_end') ended = true
      }
      await tokens?.settle()
      // Without `after` the server sends the whole journal, so the stream ends early only on Ctrl-C.
      return ended ? EXIT_CODES.completed : EXIT_CODES.cancelled
    } finally {
      tokens?.stop()
      stop()
    }
  })
}
