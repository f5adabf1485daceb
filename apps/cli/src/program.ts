import { createRequire } from 'node:module'
import { Command, Option } from 'commander'
import { LAUNCH_MODES } from '@locus/runtime'
import type { CliIo } from './cli-io.js'
import { addHostFlags } from './host-flags.js'
import type { ExitCode } from './exit-codes.js'
import { parseDuration, parsePositiveInteger } from './parse-duration.js'
import { initCommand } from './commands/init-command.js'
import { journalCommand } from './commands/journal-command.js'
import { lsCommand } from './commands/ls-command.js'
import {
  scheduleBackfillCommand,
  scheduleLsCommand,
  schedulePauseCommand,
  scheduleShowCommand,
  scheduleTriggerCommand,
} from './commands/schedule-command.js'
import { replayCommand } from './commands/replay-command.js'
import { reportCommand } from './commands/report-command.js'
import { resumeCommand } from './commands/resume-command.js'
import { runCommand } from './commands/run-command.js'
import { JITTER_FLAG_MODES, parseMaxCost, parseRetryBudget } from './commands/run-flags.js'
import { showCommand } from './commands/show-command.js'
import { serveCommand } from './commands/serve-command.js'
import { mcpCommand } from './commands/mcp-command.js'
import { checkDeployCommand } from './commands/check-deploy-command.js'
import { resolveCommand } from './commands/resolve-command.js'
import { type MessageFlags, queryCommand, signalCommand, updateCommand } from './commands/messages-command.js'
import { dbMigrateCommand, workerCommand } from './commands/worker-command.js'
import { remoteCancel, remoteJournal, remoteLs, remoteResolve, remoteRun, remoteShow, withServer } from './commands/remote.js'
import { type QueuesFlags, defaultQueueSources, queuesCommand } from './commands/queues-command.js'

const version = (createRequire(import.meta.url)('../package.json') as { version: string }).version

const integer = (flag: string) => (value: string) => parsePositiveInteger(value, flag)

function addRunsDir(command: Command): Command {
  return command.option('--runs-dir <dir>', 'where runs are stored (default: $LOCUS_RUNS_DIR or <cwd>/.locus-pi/runs)')
}

function addVerbose(command: Command): Command {
  return command.option('--verbose', 'print stack traces with errors')
}

/** `--server <url>`: the command works through a Locus server's HTTP API; `run` has `--api-key` already (its host flags). */
function addServer(command: Command, withKey = true): Command {
  command.option('--server <url>', 'work through the Locus server at this URL (@locus/client) instead of the local runs directory')
  return withKey ? command.option('--api-key <key>', "with --server: the server's API key (or $LOCUS_API_KEY)") : command
}

function addExecutionFlags(command: Command): Command {
  return command
    .option('--max-agents <n>', 'cap on physical agent attempts in the whole run, retries included', integer('--max-agents'))
    .option('--deadline <duration>', 'run deadline such as 500ms, 30s, 10m or 1h; no new call starts after it', (value: string) => parseDuration(value, '--deadline'))
    .option('--max-tool-calls <n>', 'tool calls one agent call may make', integer('--max-tool-calls'))
    .option('--max-output-tokens <n>', 'output tokens one agent call may produce', integer('--max-output-tokens'))
    .option('--max-answer-chars <n>', 'longest answer accepted from one agent call', integer('--max-answer-chars'))
    .option('--concurrency <n>', 'branches of parallel() and pipeline() running at once', integer('--concurrency'))
    .addOption(new Option('--durability <mode>', 'journal durability: fsync per line, per batch, or never').choices(['none', 'batch', 'line']))
    .addOption(new Option('--launch-mode <mode>', 'selects the per-call budget defaults').choices(LAUNCH_MODES))
    .option('--retry-budget <n>', 'retries the whole run may make, tool and agent retries alike; 0 allows none', parseRetryBudget)
    .addOption(new Option('--jitter <mode>', 'spreads tool retry backoff: none (exact), full or equal').choices(JITTER_FLAG_MODES))
    .option('--prices <file>', 'prices per model in dollars per million tokens, over the catalogue that ships with Locus (JSON: {"models":{"<model>":{"input":"3","output":"15"}}})')
    .option('--max-cost <usd>', "the most the whole run may spend, in dollars (such as 2.50): a call whose worst case does not fit is not run, and the answer says so", parseMaxCost)
    .option('--allow-unpriced', 'with --max-cost: start although a model has no price (its requests reserve nothing)')
}

/**
 * Builds the `locus` command line: run, resume, replay, show, ls, journal,
 * report and init. Each action reports its exit code through `setExitCode`;
 * parse errors surface as commander errors (with "Did you mean ...?") and usage
 * mistakes as `CliError`s, both for the caller to turn into exit code 2.
 */
export function createProgram(io: CliIo, setExitCode: (code: ExitCode) => void): Command {
  const program = new Command('locus')
    .description('Run Locus workflows and inspect what they did: every attempt journaled, failures told as they are.')
    .version(version, '-V, --version')
    .exitOverride()
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .addHelpText(
      'after',
      `
Exit codes: 0 completed, 1 failed (a partial answer is failed), 2 usage or input error, 130 cancelled.

Examples:
  locus init triage
  locus run triage.mts --host scripted --fixtures triage.fixtures.json
  locus run triage.mts --input '{"topic":"billing"}' --deadline 10m --max-agents 20
  locus ls
  locus show <runId>
  locus journal <runId> --follow --type agent_end,retry
  locus resume <runId>
  locus replay <runId>
  locus report --since 7d`,
    )

  const run = program
    .command('run')
    .description('run a workflow file (.ts, .mts, .js, .mjs) and end with a summary')
    .argument('<workflow>', 'the workflow module: its default export, or a named export `workflow` (with --server: the workflow\'s name on the server)')
    .option('--input <json>', "the workflow's input as JSON")
    .option('--input-file <file>', "a JSON file holding the workflow's input")
    .option('--run-id <id>', 'use this run id instead of a generated one')
    .option('--json', 'print every journal line as JSON, then a JSON summary line')
    .option('--quiet', 'no progress, only the summary')
    .option('--worker <command>', 'a worker process for the remote tools, speaking NDJSON on stdin/stdout, such as "python3 tools.py"')
    .option('--otel', 'export the run as OpenTelemetry spans over OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318)')
    .option('--tokens', "show the text of the run's LLM calls live on stderr, discarded text marked as discarded (progress is then plain lines)")
  addHostFlags(run)
  addExecutionFlags(run)
  addRunsDir(run)
  addServer(run, false)
  addVerbose(run).action(async (file: string, flags: Parameters<typeof runCommand>[1] & { server?: string }) => {
    setExitCode(flags.server === undefined ? await runCommand(file, flags, io) : await remoteRun(file, flags, io))
  })

  const resume = program
    .command('resume')
    .description('continue a run that was killed, cancelled or failed: recorded calls replay, the rest runs live')
    .argument('<runId>', 'the run to resume')
    .option('--workflow <file>', 'the workflow file (default: the one the run recorded)')
    .option('--json', 'print every journal line as JSON, then a JSON summary line')
    .option('--quiet', 'no progress, only the summary')
    .option('--worker <command>', 'the worker process for the remote tools (default: the one the run recorded)')
    .option('--accept-damage', 'go on with the readable lines of a damaged journal: a call with no readable end runs again live')
  addHostFlags(resume)
  addExecutionFlags(resume)
  addRunsDir(resume)
  addVerbose(resume).action(async (runId: string, flags: Parameters<typeof resumeCommand>[1]) => {
    setExitCode(await resumeCommand(runId, flags, io))
  })

  const replay = program
    .command('replay')
    .description('determinism check: re-run from the recording with no host; exit 1 when a call diverges or is missing')
    .argument('<runId>', 'the run to replay')
    .option('--workflow <file>', 'the workflow file (default: the one the run recorded)')
    .option('--json', 'print the replay journal and the report as JSON')
    .option('--accept-damage', 'go on with the readable lines of a damaged journal: a call whose lines were lost shows as missing')
  addRunsDir(replay)
  addVerbose(replay).action(async (runId: string, flags: Parameters<typeof replayCommand>[1]) => {
    setExitCode(await replayCommand(runId, flags, io))
  })

  const show = program
    .command('show')
    .description("a run's summary, its retried calls, gaps and caveats, and its result")
    .argument('<runId>', 'the run to show')
    .option('--json', 'print the summary as one JSON object')
  addRunsDir(show)
  addServer(show)
  addVerbose(show).action(async (runId: string, flags: Parameters<typeof showCommand>[1] & Parameters<typeof remoteShow>[1]) => {
    setExitCode(flags.server === undefined ? await showCommand(runId, flags, io) : await remoteShow(runId, flags, io))
  })

  const ls = program
    .command('ls')
    .description('recent runs as a table, newest first')
    .option('--limit <n>', 'how many runs to show (default: 20)', integer('--limit'))
    .option('--json', 'one JSON object a run')
  addRunsDir(ls)
  addServer(ls)
  addVerbose(ls).action(async (flags: Parameters<typeof lsCommand>[0] & Parameters<typeof remoteLs>[0]) => {
    setExitCode(flags.server === undefined ? await lsCommand(flags, io) : await remoteLs(flags, io))
  })

  const queues = program
    .command('queues')
    .description('per concurrency key and rate limit: runs running, runs waiting and the oldest wait (from a server or PostgreSQL workers)')
    .option('--database-url <url>', 'the queues of the PostgreSQL workers of this database (or $LOCUS_DATABASE_URL)')
    .option('--json', 'one JSON object a key')
  addServer(queues)
  addVerbose(queues).action(async (flags: QueuesFlags) => {
    const sources = defaultQueueSources((serverFlags, serverIo) => withServer(serverFlags, serverIo, async (client) => [...(await client.listQueues())]))
    setExitCode(await queuesCommand(flags, io, sources))
  })

  const journal = program
    .command('journal')
    .description("a run's journal, one readable line per event")
    .argument('<runId>', 'the run whose journal to print')
    .option('--type <types>', 'only these line types, comma-separated (e.g. agent_end,retry)')
    .option('--follow', 'keep printing new lines while the run is live, until it ends')
    .option('--tokens', "with --follow: the run's token stream between the lines, discarded text marked as discarded")
    .option('--database-url <url>', 'a run kept in this PostgreSQL store (postgres://...) instead of a runs directory')
    .option('--execution <id>', 'root, latest, or an execution id such as resume-001 (default: latest)')
    .option('--json', 'print the raw journal lines')
    .option('--accept-damage', 'print the readable lines of a damaged journal instead of stopping')
  addRunsDir(journal)
  addServer(journal)
  addVerbose(journal).action(async (runId: string, flags: Parameters<typeof journalCommand>[1] & Parameters<typeof remoteJournal>[1]) => {
    setExitCode(flags.server === undefined ? await journalCommand(runId, flags, io) : await remoteJournal(runId, flags, io))
  })

  const report = program
    .command('report')
    .description('the outcome table, the gaps-per-tool table, the money and the schedule slots that did not start a run, over a period')
    .option('--since <duration>', 'how far back to count, such as 24h, 7d or 30d (default: 30d)', (value: string) => parseDuration(value, '--since'))
    .option('--json', 'print both reports as one JSON object')
  addRunsDir(report)
  addVerbose(report).action(async (flags: Parameters<typeof reportCommand>[0]) => {
    setExitCode(await reportCommand(flags, io))
  })

  const init = program
    .command('init')
    .description('scaffold a workflow file and a scripted-host fixtures file to start from')
    .argument('[name]', 'the workflow name and file name (default: my-workflow)')
    .option('--dir <dir>', 'where to write the files (default: the current directory)')
    .option('--force', 'overwrite existing files')
  addVerbose(init).action((name: string | undefined, flags: Parameters<typeof initCommand>[1]) => {
    setExitCode(initCommand(name, flags, io))
  })

  const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value]

  const serve = program
    .command('serve')
    .description('serve the HTTP API (runs, live events, results) over the given workflows; Ctrl-C or SIGTERM shuts down gracefully')
    .requiredOption('--workflows <dir or file>', 'workflow files, or directories of them (repeatable)', collect)
    .option('--port <n>', 'the port (default: 4477; 0 picks a free one)', (value: string) => (value === '0' ? 0 : parsePositiveInteger(value, '--port')))
    .option('--host <address>', 'the address to listen on; anything but loopback needs LOCUS_API_KEYS (default: 127.0.0.1); the model host is --model-host')
    .option('--allow-origin <origin>', 'a web origin (https://app.example.com) whose pages may call the API, with CORS for it (repeatable; default none)', collect)
    .option('--allow-host <name>', 'a host name clients may address the server by, besides the address it listens on (repeatable)', collect)
    .option('--otel', 'export every run as OpenTelemetry spans over OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318)')
    .option('--database-url <url>', 'serve the runs of this PostgreSQL database (or $LOCUS_DATABASE_URL): runs start as queued jobs that `locus worker` processes execute')
    .option('--shutdown-grace <duration>', 'on SIGTERM or Ctrl-C, how long working runs may go on before they are cancelled; runs waiting on deferrals are suspended at once (default: 10s)', (value: string) => parseDuration(value, '--shutdown-grace'))
    .option('--prices <file>', 'prices per model in dollars per million tokens, over the catalogue that ships with Locus: runs started over HTTP are priced with them')
    .option('--max-cost <usd>', 'the money budget of each run started over HTTP that gives no budgets.maxCostUsd of its own, in dollars (such as 2.50)', parseMaxCost)
    .option('--allow-unpriced', 'with a money budget: start runs although a model has no price (its requests reserve nothing)')
    .option('--callback-secret <secret>', 'sign a callback URL for each open deferral (GET /v1/runs/{id}/deferred lists it): a POST to it settles the deferral without an API key (or $LOCUS_CALLBACK_SECRET; at least 16 characters)')
  addHostFlags(serve, { hostAlias: false })
  addRunsDir(serve)
  addVerbose(serve).action(async (flags: Parameters<typeof serveCommand>[0]) => {
    setExitCode(await serveCommand(flags, io))
  })

  const mcp = program
    .command('mcp')
    .description('serve the given workflows as MCP tools over stdio, for an MCP client to start; ends when the client closes stdin, or on SIGTERM or Ctrl-C')
    .requiredOption('--workflows <dir or file>', 'workflow files, or directories of them (repeatable)', collect)
    .option('--shutdown-grace <duration>', 'when it ends, how long working runs may go on before they are cancelled; runs waiting on deferrals are suspended at once (default: 10s)', (value: string) => parseDuration(value, '--shutdown-grace'))
    .option('--prices <file>', 'prices per model in dollars per million tokens, over the catalogue that ships with Locus; each tool result carries its run\'s cost')
  addHostFlags(addRunsDir(mcp))
  addVerbose(mcp).action(async (flags: Parameters<typeof mcpCommand>[0]) => {
    setExitCode(await mcpCommand(flags, io))
  })

  const checkDeploy = program
    .command('check-deploy')
    .description('replay every run that may still continue against the workflow code on disk; exit 1 when one would diverge')
    .requiredOption('--workflows <dir or file>', 'workflow files, or directories of them (repeatable)', collect)
    .option('--since <duration>', 'only runs started within this period, such as 30m, 12h or 7d', (value: string) => parseDuration(value, '--since'))
    .option('--all', 'check finished runs too')
    .option('--json', 'print the report as JSON')
    .option('--database-url <url>', 'check the runs of this PostgreSQL store (postgres://...) instead of a runs directory')
    .option('--concurrency <n>', 'runs replayed at once (default 4)', (value: string) => parsePositiveInteger(value, '--concurrency'))
  addRunsDir(checkDeploy)
  addVerbose(checkDeploy).action(async (flags: Parameters<typeof checkDeployCommand>[0]) => {
    setExitCode(await checkDeployCommand(flags, io))
  })

  const resolveDeferred = program
    .command('resolve')
    .description('answer a deferred tool of a run from another shell')
    .argument('<runId>', 'the run')
    .argument('<deferredId>', 'the deferral, as its deferred_open line names it')
    .option('--result <json>', 'the tool result')
    .option('--reject <message>', 'fail the call instead (terminal unless --retryable)')
    .option('--retryable', 'with --reject: let the tool policy retry it')
    .option('--database-url <url>', 'answer a run kept in this PostgreSQL store (postgres://...) instead of a runs directory')
    .option('--workflow <file>', "the workflow whose tool schema checks --result (default: the file the run recorded)")
  addRunsDir(resolveDeferred)
  addServer(resolveDeferred)
  addVerbose(resolveDeferred).action(async (runId: string, deferredId: string, flags: Parameters<typeof resolveCommand>[2] & Parameters<typeof remoteResolve>[2]) => {
    setExitCode(flags.server === undefined ? await resolveCommand(runId, deferredId, flags, io) : await remoteResolve(runId, deferredId, flags, io))
  })

  const signal = program
    .command('signal')
    .description('send a signal the run\'s workflow declares to a running run')
    .argument('<runId>', 'the run')
    .argument('<name>', 'the signal, as the workflow declares it under signals')
    .option('--data <json>', 'the payload (default null)')
    .option('--database-url <url>', 'a run kept in this PostgreSQL store (postgres://...) instead of a runs directory')
    .option('--workflow <file>', 'the workflow that declares the signal (default: the file the run recorded)')
  addRunsDir(signal)
  addServer(signal)
  addVerbose(signal).action(async (runId: string, name: string, flags: MessageFlags) => {
    setExitCode(await signalCommand(runId, name, flags, io))
  })

  const update = program
    .command('update')
    .description("send an update the run's workflow declares to a running run and print its handler's result")
    .argument('<runId>', 'the run')
    .argument('<name>', 'the update, as the workflow declares it under updates')
    .option('--data <json>', 'the input (default null)')
    .option('--wait <seconds>', "how long to wait for the handler's result (default 30)")
    .option('--database-url <url>', 'a run kept in this PostgreSQL store (postgres://...) instead of a runs directory')
    .option('--workflow <file>', 'the workflow that declares the update (default: the file the run recorded)')
  addRunsDir(update)
  addServer(update)
  addVerbose(update).action(async (runId: string, name: string, flags: MessageFlags) => {
    setExitCode(await updateCommand(runId, name, flags, io))
  })

  const query = program
    .command('query')
    .description('answer a query the run\'s workflow declares, from its journal')
    .argument('<runId>', 'the run')
    .argument('<name>', 'the query, as the workflow declares it under queries')
    .option('--database-url <url>', 'a run kept in this PostgreSQL store (postgres://...) instead of a runs directory')
    .option('--workflow <file>', 'the workflow that declares the query (default: the file the run recorded)')
  addRunsDir(query)
  addServer(query)
  addVerbose(query).action(async (runId: string, name: string, flags: MessageFlags) => {
    setExitCode(await queryCommand(runId, name, flags, io))
  })

  const cancel = program
    .command('cancel')
    .description('cancel a run a Locus server executes (needs --server; a local run stops with Ctrl-C)')
    .argument('<runId>', 'the run to cancel')
    .option('--reason <text>', "handed to the run's cancellation")
  addServer(cancel)
  addVerbose(cancel).action(async (runId: string, flags: Parameters<typeof remoteCancel>[1]) => {
    setExitCode(await remoteCancel(runId, flags, io))
  })

  const worker = program
    .command('worker')
    .description('execute queued runs from PostgreSQL, sharing them with other workers (docs/scaling.md); SIGTERM stops it')
    .option('--database-url <url>', 'postgres://... (or $LOCUS_DATABASE_URL)')
    .requiredOption('--workflows <dir or file>', 'workflow files, or directories of them (repeatable)', collect)
    .option('--concurrency <n>', 'runs executed at once (default 4)', (value: string) => parsePositiveInteger(value, '--concurrency'))
    .option('--lease-ms <n>', 'lease length; another worker takes a run this long after its worker died (default 10000)', (value: string) => parsePositiveInteger(value, '--lease-ms'))
    .option('--max-agents <n>', "default cap on physical agent attempts in a run, retries included; a run's own budgets win", integer('--max-agents'))
    .option('--deadline <duration>', "default run deadline such as 30s or 10m; a run's own budgets win", (value: string) => parseDuration(value, '--deadline'))
    .option('--retry-budget <n>', 'default retries a run may make, tool and agent retries alike; 0 allows none', parseRetryBudget)
    .option('--prices <file>', 'prices per model in dollars per million tokens, over the catalogue that ships with Locus: the runs it executes are priced with them')
    .option('--max-cost <usd>', "default money budget of a run, in dollars such as 2.50; a run's own budgets.maxCostUsd wins", parseMaxCost)
    .option('--allow-unpriced', 'runs with a money budget start although a model has no price (its requests reserve nothing)')
  addHostFlags(worker)
  addVerbose(worker).action(async (flags: Parameters<typeof workerCommand>[0]) => {
    setExitCode(await workerCommand(flags, io))
  })

  const schedule = program.command('schedule').description('the schedules `locus serve` and `locus worker` fire, and the record of every slot')
  const scheduleStore = (command: Command): Command =>
    addVerbose(
      addRunsDir(command)
        .option('--database-url <url>', 'the schedules of this PostgreSQL store (postgres://...) instead of a runs directory')
        .option('--json', 'print JSON'),
    )
  scheduleStore(schedule.command('ls').description('list the schedules registered in the store, with their latest slot')).action(
    async (flags: Parameters<typeof scheduleLsCommand>[0]) => {
      setExitCode(await scheduleLsCommand(flags, io))
    },
  )
  scheduleStore(
    schedule
      .command('show')
      .description('print a schedule and its slot records { slot, outcome, runId? }, newest first')
      .argument('<id>', 'the schedule')
      .option('--limit <n>', 'slot records to print (default 50)', (value: string) => parsePositiveInteger(value, '--limit')),
  ).action(async (id: string, flags: Parameters<typeof scheduleShowCommand>[1]) => {
    setExitCode(await scheduleShowCommand(id, flags, io))
  })
  scheduleStore(schedule.command('pause').description('pause a schedule: its slots are recorded paused').argument('<id>', 'the schedule')).action(
    async (id: string, flags: Parameters<typeof schedulePauseCommand>[2]) => {
      setExitCode(await schedulePauseCommand(id, true, flags, io))
    },
  )
  scheduleStore(schedule.command('unpause').description('unpause a schedule').argument('<id>', 'the schedule')).action(
    async (id: string, flags: Parameters<typeof schedulePauseCommand>[2]) => {
      setExitCode(await schedulePauseCommand(id, false, flags, io))
    },
  )
  scheduleStore(schedule.command('trigger').description('fire a slot of the schedule now (its overlap policy applies)').argument('<id>', 'the schedule')).action(
    async (id: string, flags: Parameters<typeof scheduleTriggerCommand>[1]) => {
      setExitCode(await scheduleTriggerCommand(id, flags, io))
    },
  )
  scheduleStore(
    schedule
      .command('backfill')
      .description("fire the schedule's slots between two times, whatever their age")
      .argument('<id>', 'the schedule')
      .requiredOption('--from <time>', 'the first time, ISO 8601 (2026-01-01T00:00:00Z)')
      .requiredOption('--to <time>', 'the last time, ISO 8601'),
  ).action(async (id: string, flags: Parameters<typeof scheduleBackfillCommand>[1]) => {
    setExitCode(await scheduleBackfillCommand(id, flags, io))
  })

  const db = program.command('db').description('manage the PostgreSQL database of workers and servers')
  const dbMigrate = db
    .command('migrate')
    .description("apply Locus's and graphile-worker's migrations (idempotent; safe from several places at once)")
    .option('--database-url <url>', 'postgres://... (or $LOCUS_DATABASE_URL)')
  addVerbose(dbMigrate).action(async (flags: Parameters<typeof dbMigrateCommand>[0]) => {
    setExitCode(await dbMigrateCommand(flags, io))
  })

  return program
}
