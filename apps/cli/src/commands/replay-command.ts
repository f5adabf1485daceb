import { closeMcpToolSources } from '@locus/mcp'
import type { ReplayReport } from '@locus/replay'
import { type ReplayRunResult, createRuntime, recordedStart, replayResultOf, toWorkflowDefinition } from '@locus/runtime'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { displayPath } from '../format-summary.js'
import { formatTable } from '../format-table.js'
import { interruptExecution } from '../interrupts.js'
import { ensureWritableRunsDir, resolveRunsDir } from '../runs-dir.js'
import { type Style, styleFor } from '../style.js'
import { checkJournalDamage, damagedJournals } from './journal-damage.js'
import { describeNothingRecorded, loadRecordedWorkflow } from './recorded-workflow.js'
import { asCliInputError } from './run-command.js'
import type { OutputFlags } from './run-flags.js'
import { openStoredRun } from './stored-run.js'

/** Flags of `locus replay`. */
export interface ReplayFlags extends OutputFlags {
  readonly workflow?: string | undefined
  /** Replay the readable lines of a damaged journal instead of stopping. */
  readonly acceptDamage?: boolean | undefined
}

function statusCell(status: string, style: Style): string {
  return status === 'matched' ? style.green(status) : style.red(status)
}

/** The per-call replay report as a table, with the verdict and counts beneath. */
export function formatReplayReport(report: ReplayReport, style: Style): string {
  const rows: string[][] = [['ORDINAL', 'STATUS', 'SERVED', 'DIFFERS IN']]
  for (const call of report.calls) {
    rows.push([call.ordinal, statusCell(call.status, style), call.decision ?? '-', call.fields === undefined || call.fields.length === 0 ? '-' : call.fields.join(', ')])
  }
  for (const extra of report.extra) rows.push([extra.ordinal, style.red('extra'), 'live', 'not in the recording'])
  const counts = report.counts
  const lines = [
    formatTable(rows),
    '',
    `${counts.matched} matched, ${counts.diverged} diverged, ${counts.missing} missing, ${counts.extra} extra; ${counts.replayed} served from the recording, ${counts.live} live.`,
  ]
  if (report.divergence !== null) {
    const fields = report.divergence.fields.length === 0 ? '' : ` (${report.divergence.fields.join(', ')} differ)`
    lines.push(style.red(`Diverged first at ${report.divergence.ordinal}${fields}: the workflow no longer asks what the recording holds.`))
  }
  return lines.join('\n')
}

/**
 * `locus replay <runId>`: the determinism check. Re-runs the workflow with
 * every call answered from the run's recording and no host; exits 0 when every
 * recorded call was asked for again with the same request and nothing else
 * was asked, 1 when a call diverged, went missing or was extra. A damaged
 * journal stops it first with exit 2, naming each damaged line, unless
 * `--accept-damage` is given.
 */
export async function replayCommand(runId: string, flags: ReplayFlags, io: CliIo): Promise<ExitCode> {
  const runsDir = resolveRunsDir(flags.runsDir, io)
  const run = await openStoredRun(runsDir, runId)
  checkJournalDamage(damagedJournals([...run.executions, ...run.children]), { runId, command: 'replay', acceptDamage: flags.acceptDamage, io })
  if (run.nothingRecorded) {
    const { problem, remedy } = describeNothingRecorded(run, io.cwd)
    throw new CliError('RUN_NOTHING_RECORDED', `Run ${runId} has nothing to replay: ${problem}. Instead, ${remedy}; then replay that.`)
  }
  const loaded = await loadRecordedWorkflow(run, flags.workflow, io, 'replay')
  // The root's input, or the latest execution's when the root's journal recorded none.
  const input = recordedStart(run).fallbackInput
  ensureWritableRunsDir(runsDir)
  const json = flags.json === true
  // The first Ctrl-C cancels; the second flushes the execution's buffered lines and exits.
  const interrupts = interruptExecution(io)
  let replayed: ReplayRunResult
  try {
    // `locus replay` goes through the runtime like `run` and `resume`: the file store over the runs directory, and no host.
    const workflow = toWorkflowDefinition(loaded.workflow)
    const handle = await createRuntime({ workflows: [workflow], runsDir }).replay(runId, {
      workflow,
      source: loaded.path,
      signal: interrupts.signal,
      ...(input === undefined ? {} : { input }),
      ...(json
        ? {
            onEvent: (line) => {
              io.stdout.write(`${JSON.stringify(line)}\n`)
            },
          }
        : {}),
    })
    interrupts.started(handle)
    replayed = replayResultOf(await handle.done)
  } catch (error) {
    throw asCliInputError(error)
  } finally {
    interrupts.stop()
    await closeMcpToolSources()
  }
  const code = replayed.run.disposition === 'cancelled' ? EXIT_CODES.cancelled : replayed.ok ? EXIT_CODES.completed : EXIT_CODES.failed
  if (json) {
    io.stdout.write(`${JSON.stringify({ type: 'replay', ok: replayed.ok, runId, executionDir: replayed.executionDir, report: replayed.report, exitCode: code })}\n`)
    return code
  }
  const style = styleFor(io.stdout, io.env)
  const verdict = replayed.ok
    ? style.green('identical: every recorded call was asked for again with the same request')
    : style.red('NOT identical: the run does not replay as recorded')
  io.stdout.write(
    `Replay of run ${runId} against ${displayPath(loaded.path, io.cwd)}: ${verdict}\n\n${formatReplayReport(replayed.report, style)}\n` +
      style.dim(`The replay's own journal: ${displayPath(replayed.run.journalLocation, io.cwd)}\n`),
  )
  return code
}
