import { JOURNAL_LINE_TYPES, type JournalDamage, type JournalLine, type JournalLineType, validateRunId } from '@locus/journal'
import type { ExecutionInfo, RunStore } from '@locus/store'
import { openRunStore } from '../open-run-store.js'
import { type TokenPrinter, type TokenRecord, createTokenPrinter, followStoreTokens } from '../token-printer.js'
import { latestExecution } from '@locus/runtime'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { formatJournalLine } from '../format-journal-line.js'
import { resolveRunsDir } from '../runs-dir.js'
import { styleFor } from '../style.js'
import { checkJournalDamage } from './journal-damage.js'
import type { OutputFlags } from './run-flags.js'
import { listStoredExecutions } from './stored-run.js'

/** Flags of `locus journal`. */
export interface JournalFlags extends OutputFlags {
  /** Line types to keep, comma-separated: `agent_end,retry`. */
  readonly type?: string | undefined
  readonly follow?: boolean | undefined
  /** `root`, `latest` or an execution id such as `resume-001`. @default 'latest' */
  readonly execution?: string | undefined
  /** Print the readable lines of a damaged journal instead of stopping. */
  readonly acceptDamage?: boolean | undefined
  /** With `follow`: the run's token stream between the lines. */
  readonly tokens?: boolean | undefined
  /** A run kept in this PostgreSQL store instead of the runs directory. */
  readonly databaseUrl?: string | undefined
}

/** Follows the run's token stream in the store into the printer; ends the printer's open line when done. */
function followTokensInto(printer: TokenPrinter, streams: NonNullable<RunStore['streams']>, runId: string, stop: AbortSignal, endedAt: () => number | undefined): Promise<number> {
  const onRecord = (record: TokenRecord): void => {
    printer.record(record)
  }
  return followStoreTokens(streams, runId, { stop, onRecord, endedAt }).finally(() => {
    printer.finish()
  })
}

/** `--tokens` only means something with `--follow`: refused without it, so no one waits for tokens that never print. */
export function checkTokensFlags(flags: { readonly tokens?: boolean | undefined; readonly follow?: boolean | undefined }): void {
  if (flags.tokens === true && flags.follow !== true) {
    throw new CliError('CLI_USAGE', '--tokens shows the token stream while following a run: pass it with --follow.')
  }
}

/** Reads `--type a,b` into a set of line types, refusing unknown ones. */
export function parseLineTypes(text: string | undefined): ReadonlySet<JournalLineType> | undefined {
  if (text === undefined) return undefined
  const types = text.split(',').map((type) => type.trim()).filter((type) => type !== '')
  const unknown = types.filter((type) => !(JOURNAL_LINE_TYPES as readonly string[]).includes(type))
  if (unknown.length > 0) {
    throw new CliError('CLI_USAGE', `Unknown journal line type ${unknown.map((type) => `"${type}"`).join(', ')}: --type takes a comma-separated list of ${JOURNAL_LINE_TYPES.join(', ')}.`)
  }
  return new Set(types as JournalLineType[])
}

/**
 * `locus journal <runId>`: the run's journal, one readable line per journal
 * line (or the raw JSON with `--json`), filtered with `--type`, and with
 * `--follow` kept open while the run is live, until its `run_end`. A
 * damaged journal (an unreadable line, a `seq` gap or repeat) stops it with
 * exit 2, naming each damaged line, unless `--accept-damage` is given.
 */
export async function journalCommand(runId: string, flags: JournalFlags, io: CliIo): Promise<ExitCode> {
  checkTokensFlags(flags)
  const types = parseLineTypes(flags.type)
  if (flags.databaseUrl === undefined) {
    const runsDir = resolveRunsDir(flags.runsDir, io)
    return printJournal(runId, flags, io, types, await listStoredExecutions(runsDir, runId))
  }
  validateRunId(runId, 'run id')
  const opened = openRunStore(flags, io, { maxConnections: 2 })
  try {
    // PostgreSQL's tail listens on a connection of its own, and the token stream reads beside it.
    return await printJournal(runId, flags, io, types, { store: opened.store, executions: await opened.store.listExecutions(runId) })
  } finally {
    await opened.close()
  }
}

async function printJournal(
  runId: string,
  flags: JournalFlags,
  io: CliIo,
  types: ReadonlySet<JournalLineType> | undefined,
  { store, executions }: { readonly store: RunStore; readonly executions: readonly ExecutionInfo[] },
): Promise<ExitCode> {
  const wanted = flags.execution ?? 'latest'
  const execution = wanted === 'latest' ? latestExecution(executions) : wanted === 'root' ? executions[0] : executions.find((candidate) => candidate.executionId === wanted)
  if (execution === undefined) {
    throw new CliError('CLI_USAGE', `Run ${runId} has no execution "${wanted}"; it has ${executions.map((candidate) => candidate.executionId).join(', ')} (or say root or latest).`)
  }
  if (flags.acceptDamage !== true) {
    // Read once for damage before printing anything; with --accept-damage, each damaged place goes to stderr as it is skipped.
    const damage: JournalDamage[] = []
    const reading = store.readLines(execution, { onDamage: (place) => damage.push(place) })[Symbol.asyncIterator]()
    while ((await reading.next()).done !== true) {
      // Only the damage, told after the last line, is wanted here.
    }
    const journal = { path: execution.journalLocation ?? execution.location, execution: execution.executionId, damage }
    checkJournalDamage(damage.length === 0 ? [] : [journal], { runId, command: 'journal', acceptDamage: false, io })
  }
  const style = styleFor(io.stdout, io.env)
  let startedAt: number | undefined
  const printer = flags.tokens === true ? createTokenPrinter(io.stdout, style, { runId, json: flags.json }) : undefined
  const print = (line: JournalLine): void => {
    if (line.type === 'run_start') startedAt ??= Date.parse(line.ts)
    if (types !== undefined && !types.has(line.type)) return
    printer?.beforeLine()
    io.stdout.write(flags.json === true ? `${JSON.stringify(line)}\n` : `${formatJournalLine(line, startedAt, style)}\n`)
  }
  const onProblem = (problem: string): void => {
    io.stderr.write(`locus: skipped part of the journal: ${problem}\n`)
  }
  if (flags.follow !== true) {
    for await (const line of store.readLines(execution, { onProblem })) print(line)
    return EXIT_CODES.completed
  }
  const controller = new AbortController()
  const tokensStop = new AbortController()
  let endedAt: number | undefined
  // The run's token stream (across its executions) beside the journal's tail; it reads what is left once the tail ends.
  const tokens = printer === undefined || store.streams === undefined ? undefined : followTokensInto(printer, store.streams, runId, tokensStop.signal, () => endedAt)
  const stop = io.onInterrupt(() => {
    controller.abort()
    tokensStop.abort()
  })
  try {
    // The store's tail: the lines so far, then each new one, until run_end or Ctrl-C.
    let ended = false
    for await (const line of store.tail(execution, { signal: controller.signal, onProblem })) {
      print(line)
      if (line.type === 'run_end') {
        ended = true
        endedAt = Date.parse(line.ts)
      }
    }
    tokensStop.abort()
    await tokens
    return ended ? EXIT_CODES.completed : EXIT_CODES.cancelled
  } finally {
    tokensStop.abort()
    await tokens?.catch(() => undefined)
    stop()
  }
}
