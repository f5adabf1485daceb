import { closeMcpToolSources } from '@locus/mcp'
import { loadPrices } from '../load-prices.js'
import { type ResumeResult, createRuntime, recordedStart, resumeResultOf, toWorkflowDefinition } from '@locus/runtime'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { type HostFlags, createHost } from '../create-host.js'
import type { ExitCode } from '../exit-codes.js'
import { displayPath } from '../format-summary.js'
import { interruptExecution } from '../interrupts.js'
import { chooseProgressMode, createProgressReporter } from '../progress/progress-reporter.js'
import { ensureWritableRunsDir, resolveRunsDir } from '../runs-dir.js'
import { styleFor } from '../style.js'
import { describeWorker, resumeWorkerTransport } from '../worker-transport.js'
import { createLiveSummary, finishRun } from './finish-run.js'
import { checkJournalDamage, damagedJournals } from './journal-damage.js'
import { asCliOwnershipError } from './ownership-errors.js'
import { loadRecordedWorkflow } from './recorded-workflow.js'
import { asCliInputError, checkBudgetPrices, tryOpenMetrics } from './run-command.js'
import { type ExecutionFlags, type OutputFlags, executionOptions } from './run-flags.js'
import { openStoredRun } from './stored-run.js'

/** Flags of `locus resume`. */
export interface ResumeFlags extends OutputFlags, ExecutionFlags, HostFlags {
  readonly workflow?: string | undefined
  readonly quiet?: boolean | undefined
  /** `--worker <command>`: the worker for the run's remote tools, instead of the one its `run_start` recorded. */
  readonly worker?: string | undefined
  /** Resume from the readable lines of a damaged journal instead of stopping. */
  readonly acceptDamage?: boolean | undefined
}

/**
 * `locus resume <runId>`: a new execution replays the run's recorded calls
 * (no host call while requests match) and continues live from where it
 * stopped: a crash, a kill, a cancellation or a failed call. The workflow
 * comes from `run_start.options.source` or `--workflow`; input, budgets,
 * scheduling and retry settings from the run as recorded, unless flags
 * override them. A damaged journal stops it first with exit 2, naming each
 * damaged line, unless `--accept-damage` is given: then a call with no
 * readable end runs again live.
 */
export async function resumeCommand(runId: string, flags: ResumeFlags, io: CliIo): Promise<ExitCode> {
  const runsDir = resolveRunsDir(flags.runsDir, io)
  const run = await openStoredRun(runsDir, runId)
  checkJournalDamage(damagedJournals([...run.executions, ...run.children]), { runId, command: 'resume', acceptDamage: flags.acceptDamage, io })
  const standing = run.summary.standing
  if (standing === 'completed') {
    throw new CliError('CLI_USAGE', `Run ${runId} already completed; there is nothing to resume. \`locus replay ${runId}\` checks that it replays identically.`)
  }
  const loaded = await loadRecordedWorkflow(run, flags.workflow, io, 'resume')
  const recorded = recordedStart(run)
  const options = executionOptions(flags, recorded.options)
  const chosen = await createHost(flags, {
    cwd: io.cwd,
    env: io.env,
    workflowPath: loaded.path,
    preferred: recorded.host,
    recordedSettings: recorded.hostSettings,
    launchMode: options.launchMode,
  })
  ensureWritableRunsDir(runsDir)
  const worker = resumeWorkerTransport(flags.worker, recorded.workerSettings, io.cwd)
  const json = flags.json === true
  const style = styleFor(io.stdout, io.env)
  const reporter = createProgressReporter(chooseProgressMode(flags, io.stdout), io.stdout, style)
  const live = createLiveSummary(run.view)
  const prices = await loadPrices(flags.prices, io.cwd)
  checkBudgetPrices(loaded.workflow, { ...options, prices, ...(chosen.host === undefined ? {} : { host: chosen.host }) })
  const metrics = await tryOpenMetrics(io, runsDir)
  // The first Ctrl-C cancels; the second flushes the execution's buffered lines and exits.
  const interrupts = interruptExecution(io)
  try {
    if (!json && flags.quiet !== true) {
      const workerText = describeWorker(worker)
      io.stdout.write(style.dim(`locus: resuming run ${runId} (${standing}) of ${displayPath(loaded.path, io.cwd)}, host ${chosen.description}${workerText === undefined ? '' : `, worker ${workerText}`}\n`))
    }
    let resumed: ResumeResult
    try {
      // `locus resume` goes through the runtime like `run` and the server: the file store over the runs directory, this host.
      const workflow = toWorkflowDefinition(loaded.workflow)
      const runtime = createRuntime({ workflows: [workflow], runsDir, ...(chosen.host === undefined ? {} : { host: chosen.host }) })
      let resumedFrom = run.latest.info.executionId
      const handle = await runtime.resume(runId, {
        workflow,
        ...options,
        // The root's input is read by the runtime; when its journal recorded none, the latest execution's.
        ...(recorded.fallbackInput === undefined ? {} : { input: recorded.fallbackInput }),
        ...(metrics === undefined ? {} : { metrics }),
        ...(worker === undefined ? {} : { worker }),
        prices,
        source: loaded.path,
        // The runtime decides again under the run's lock whether it completed: another resume may have since the check above.
        signal: interrupts.signal,
        onEvent: (line) => {
          // The execution it continues, as its run_start records it (decided under the run's lock).
          if (line.type === 'run_start' && line.resumeOf !== undefined) resumedFrom = line.resumeOf
          live.apply(line)
          reporter.onEvent(line)
        },
        onProgress: (progress) => {
          reporter.onProgress?.(progress)
        },
      })
      interrupts.started(handle)
      resumed = resumeResultOf(await handle.done, resumedFrom)
    } catch (error) {
      throw asCliOwnershipError(error) ?? asCliInputError(error)
    } finally {
      reporter.finish()
    }
    if (!json) {
      const divergence = resumed.divergence === null ? '' : `; diverged at ${resumed.divergence.ordinal}, so later calls ran live`
      io.stdout.write(`\nResumed from ${resumed.resumedFrom}: ${resumed.replayed} call(s) replayed from the recording, ${resumed.live} ran live${divergence}.\n`)
    }
    return finishRun(io, live.summarize(resumed), resumed, json)
  } finally {
    interrupts.stop()
    await closeMcpToolSources()
    await worker?.close()
    await metrics?.close()
  }
}
