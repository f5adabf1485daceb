import { closeMcpToolSources } from '@locus/mcp'
import { loadPrices } from '../load-prices.js'
import { join } from 'node:path'
import { validateRunId } from '@locus/journal'
import { type OutcomeStore } from '@locus/partial'
import { type RunHandle, type RunOptions, type RunResult, RuntimeInputError, checkMoneyBudget, createRuntime, toWorkflowDefinition } from '@locus/runtime'
import { inCliWords } from '../cli-words.js'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { createHost } from '../create-host.js'
import type { ExitCode } from '../exit-codes.js'
import { displayPath } from '../format-summary.js'
import { interruptExecution } from '../interrupts.js'
import { loadWorkflow } from '../load-workflow.js'
import { describeMetrics, openMetrics } from '../open-metrics.js'
import { chooseProgressMode, createProgressReporter } from '../progress/progress-reporter.js'
import { readWorkflowInput } from '../read-workflow-input.js'
import { startOtelExport } from '../otel-export.js'
import { ensureWritableRunsDir, resolveRunsDir } from '../runs-dir.js'
import { styleFor } from '../style.js'
import { shellWorkerTransport } from '../worker-transport.js'
import { createLiveSummary, finishRun } from './finish-run.js'
import { asCliOwnershipError } from './ownership-errors.js'
import { type RunFlags, executionOptions, showsTokens } from './run-flags.js'
import { createFileRunStore } from '@locus/store'
import { type TokenRecord, createTokenPrinter, followStoreTokens } from '../token-printer.js'

/** Turns the runtime's input errors (bad input, bad options) into the CLI's exit-2 errors. */
export function asCliInputError(error: unknown): unknown {
  if (!RuntimeInputError.isInstance(error)) return error
  const code = error.code === 'WORKFLOW_INPUT_INVALID' ? 'CLI_INPUT_INVALID' : 'CLI_USAGE'
  const hint = error.code === 'WORKFLOW_INPUT_INVALID' ? '\nPass the input with --input \'<json>\' or --input-file <file>.' : ''
  return new CliError(code, `${error.message}${hint}`, { cause: error })
}

/** Checks a run's money budget (`--max-cost`) against its prices before anything is written, in the CLI's words. */
export function checkBudgetPrices(workflow: unknown, options: RunOptions): void {
  try {
    checkMoneyBudget(typeof workflow === 'object' && workflow !== null ? workflow : {}, options)
  } catch (error) {
    if (RuntimeInputError.isInstance(error)) throw new CliError('CLI_USAGE', inCliWords(error.message), { cause: error })
    throw error
  }
}

/** Opens the metrics store; a store that cannot open is reported and the run goes on without it. */
export async function tryOpenMetrics(io: CliIo, runsDir: string): Promise<OutcomeStore | undefined> {
  try {
    return await openMetrics(runsDir, io.env)
  } catch (error) {
    io.stderr.write(`locus: warning: outcome metrics are off for this run: ${describeMetrics(runsDir, io.env)} could not be opened (${(error as Error).message}).\n`)
    return undefined
  }
}

/**
 * `locus run <file>`: loads the workflow, validates its input, runs it with
 * the chosen host and budgets while showing progress, records its metrics and
 * ends with a summary. Returns the exit code: 0 completed, 1 failed, 130 cancelled.
 */
export async function runCommand(file: string, flags: RunFlags, io: CliIo): Promise<ExitCode> {
  // The id rule every command states the same way (show, resume, replay and journal check it too).
  if (flags.runId !== undefined) validateRunId(flags.runId, 'run id')
  const runsDir = resolveRunsDir(flags.runsDir, io)
  const loaded = await loadWorkflow(file, io.cwd)
  const input = readWorkflowInput(flags, io.cwd)
  const chosen = await createHost(flags, { cwd: io.cwd, env: io.env, workflowPath: loaded.path, launchMode: flags.launchMode })
  ensureWritableRunsDir(runsDir)
  const json = flags.json === true
  const style = styleFor(io.stdout, io.env)
  const mode = chooseProgressMode(flags, io.stdout)
  // The tree redraws itself in place: with tokens on the same terminal it is plain lines instead.
  const reporter = createProgressReporter(mode === 'tree' && showsTokens(flags) ? 'plain' : mode, io.stdout, style)
  // The summary at the end is folded from the lines as they are written, not read back from the run directory.
  const live = createLiveSummary()
  // Remote tools reach their worker through a child process started by the shell on the first call.
  const worker = flags.worker === undefined ? undefined : shellWorkerTransport(flags.worker, io.cwd)
  // Checked before anything is written: a bad price file stops the run here.
  const prices = await loadPrices(flags.prices, io.cwd)
  // A money budget needs a price for every model the run may call: refused before the metrics store is opened.
  checkBudgetPrices(loaded.workflow, { ...executionOptions(flags), prices, ...(chosen.host === undefined ? {} : { host: chosen.host }) })
  const metrics = await tryOpenMetrics(io, runsDir)
  const otel = flags.otel === true ? startOtelExport(io.env) : undefined
  const traceLine = otel?.tracerForExecution()
  // Tokens are read back from the run's token stream in the store, as any other reader would, and go to stderr.
  const tokens = showsTokens(flags) ? { stop: new AbortController(), following: undefined as Promise<number> | undefined } : undefined
  const startTokens = (runId: string): void => {
    if (tokens === undefined || tokens.following !== undefined) return
    const printer = createTokenPrinter(io.stderr, styleFor(io.stderr, io.env), { runId })
    const streams = createFileRunStore(runsDir).streams
    if (streams === undefined) return
    const onRecord = (record: TokenRecord): void => {
      printer.record(record)
    }
    tokens.following = followStoreTokens(streams, runId, { stop: tokens.stop.signal, onRecord }).finally(() => {
      printer.finish()
    })
  }
  try {
    // `locus run` goes through the runtime like every other way in: the file store over the runs directory, this host.
    // The first Ctrl-C cancels (journaled as asked by `cli`); the second flushes the execution's buffered lines and exits.
    // The process is held open until the run settles: a run waiting on a hung host turn must not lose its process.
    const interrupts = interruptExecution(io)
    let result: RunResult
    try {
      let handle: RunHandle
      try {
        const workflow = toWorkflowDefinition(loaded.workflow)
        const runtime = createRuntime({ workflows: [workflow], runsDir, ...(chosen.host === undefined ? {} : { host: chosen.host }) })
        handle = await runtime.start(workflow, {
          input,
          ...executionOptions(flags),
          ...(flags.runId === undefined ? {} : { runId: flags.runId }),
          ...(metrics === undefined ? {} : { metrics }),
          ...(worker === undefined ? {} : { worker }),
          prices,
          source: loaded.path,
          signal: interrupts.signal,
          onEvent: (line) => {
            if (line.type === 'run_start' && !json && flags.quiet !== true) {
              io.stdout.write(style.dim(`locus: run ${line.runId} of ${displayPath(loaded.path, io.cwd)}, host ${chosen.description}, in ${displayPath(join(runsDir, line.runId), io.cwd)}\n`))
            }
            if (line.type === 'run_start') startTokens(line.runId)
            live.apply(line)
            reporter.onEvent(line)
            traceLine?.(line)
          },
          onProgress: (progress) => {
            reporter.onProgress?.(progress)
          },
        })
      } catch (error) {
        // A taken --run-id is refused by the store when the run's execution is created, before its first line.
        throw asCliOwnershipError(error, flags.runId) ?? asCliInputError(error)
      }
      interrupts.started(handle)
      try {
        result = await handle.done
      } catch (error) {
        throw asCliOwnershipError(error, flags.runId) ?? error
      }
    } finally {
      interrupts.stop()
      // The run has settled, its last stream batch with it: the follower reads what is left and stops.
      tokens?.stop.abort()
      await tokens?.following?.catch((error: unknown) => {
        io.stderr.write(`locus: warning: the run's tokens could not be read: ${error instanceof Error ? error.message : String(error)}\n`)
      })
      reporter.finish()
    }
    return finishRun(io, live.summarize(result), result, json)
  } finally {
    // MCP servers the workflow file started at import would keep the process alive after run_end.
    await closeMcpToolSources()
    await worker?.close()
    await metrics?.close()
    await otel?.shutdown().catch((error: unknown) => {
      io.stderr.write(`locus: warning: the run's traces could not be sent to ${otel.url}: ${error instanceof Error ? error.message : String(error)}\n`)
    })
  }
}
