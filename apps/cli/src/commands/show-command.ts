import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { displayPath, formatCallCosts, formatResult, formatSummary, indentLines, styleStanding } from '../format-summary.js'
import { resolveRunsDir } from '../runs-dir.js'
import { styleFor } from '../style.js'
import type { OutputFlags } from './run-flags.js'
import { callCosts } from '@locus/journal'
import { executionStandings } from '@locus/runtime'
import { openStoredRun } from './stored-run.js'
import { formatWaits } from './queues-command.js'

/**
 * `locus show <runId>`: the run as it stands (its latest execution), its
 * executions, every retried call attempt by attempt, the gaps and caveats of
 * a partial answer, and the result.
 */
export async function showCommand(runId: string, flags: OutputFlags, io: CliIo): Promise<ExitCode> {
  const runsDir = resolveRunsDir(flags.runsDir, io)
  // Every call kept, so the cost listing names the calls that completed at once too.
  const run = await openStoredRun(runsDir, runId, { keep: 'all' })
  const summary = run.summary
  const costs = callCosts(run.view)
  // An execution that stopped without run_end reads unfinished, taken-over or suspended: the rule the server shares.
  const standings = executionStandings(run.executions)
  const executions = run.executions.map((execution, index) => ({ executionId: execution.info.executionId, kind: execution.info.kind, standing: standings[index] ?? execution.summary.standing }))
  const replays = run.replays.map((replay) => replay.info.executionId)
  // Every child run the run's scripts spawned, grandchildren included, each in its own execution.
  const childRuns = run.children.map((child) => ({ executionId: child.info.executionId, workflow: child.summary.workflow, standing: child.summary.standing }))
  // What the run waited for: its start (the `queued` line) and its LLM requests' rate limits (`rate_wait` lines).
  const waits = { queued: run.view.queued ?? null, rate: run.view.rateWaits }
  if (flags.json === true) {
    io.stdout.write(`${JSON.stringify({ type: 'run', ...summary, callCosts: costs, executions, replays, childRuns, waits })}\n`)
    return EXIT_CODES.completed
  }
  const style = styleFor(io.stdout, io.env)
  const out = [formatSummary(summary, { cwd: io.cwd, style, includeResult: false })]
  if (summary.source !== undefined) out.push(`  ${style.dim('workflow:'.padEnd(10))}${displayPath(summary.source, io.cwd)}`)
  out.push(...formatWaits(waits, style))
  if (executions.length > 1) {
    out.push('', style.bold('Executions:'))
    for (const execution of executions) out.push(`  ${execution.executionId.padEnd(16)} ${execution.kind.padEnd(7)} ${styleStanding(execution.standing, style)}`)
  }
  if (replays.length > 0) out.push(`  ${style.dim(`${replays.length} replay(s): ${replays.join(', ')}`)}`)
  if (childRuns.length > 0) {
    out.push('', style.bold('Child runs:'))
    for (const child of childRuns) out.push(`  ${child.executionId.padEnd(24)} ${child.workflow} ${styleStanding(child.standing, style)}`)
  }
  if (summary.retriedCalls.length > 0) {
    out.push('', style.bold('Retried calls:'))
    for (const call of summary.retriedCalls) {
      out.push(`  ${call.kind} ${call.name} (${call.id})`)
      for (const attempt of call.attempts) {
        out.push(`    attempt ${attempt.attempt}${call.kind === 'agent' ? ` ${style.dim(attempt.callId)}` : ''}: ${attempt.outcome === 'completed' ? style.green(attempt.outcome) : style.yellow(attempt.outcome)}`)
      }
    }
  }
  if (costs.length > 0) out.push('', style.bold('Cost per call:'), ...formatCallCosts(costs, style))
  if (summary.gaps.length > 0) {
    out.push('', style.bold('Gaps:'))
    for (const gap of summary.gaps) out.push(`  - ${gap.tool} (${gap.criticality})${gap.reason === undefined ? '' : `: ${gap.reason}`}`)
  }
  if (summary.caveats.length > 0) {
    out.push('', style.bold('Caveats:'))
    for (const caveat of summary.caveats) out.push(`  - ${caveat}`)
  }
  out.push('', style.bold('Result:'), ...indentLines(formatResult(summary.result, summary.standing, { resultFile: summary.resultPath, cwd: io.cwd })))
  io.stdout.write(`${out.join('\n')}\n`)
  return EXIT_CODES.completed
}
