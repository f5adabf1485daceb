import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { displayPath, formatResult, formatSummary, indentLines, styleStanding } from '../format-summary.js'
import { readRunRecord } from '../run-record.js'
import { resolveRunsDir } from '../runs-dir.js'
import { styleFor } from '../style.js'
import { summarizeExecution, summarizeRun } from '../summarize-run.js'
import type { OutputFlags } from './run-flags.js'

/**
 * `locus show <runId>`: the run as it stands (its latest execution), its
 * executions, every retried call attempt by attempt, the gaps and caveats of
 * a partial answer, and the result.
 */
export function showCommand(runId: string, flags: OutputFlags, io: CliIo): ExitCode {
  const runsDir = resolveRunsDir(flags.runsDir, io)
  const run = readRunRecord(runsDir, runId)
  const summary = summarizeRun(run)
  const executions = run.executions.map((execution) => ({ executionId: execution.executionId, kind: execution.kind, standing: summarizeExecution(execution).standing }))
  if (flags.json === true) {
    io.stdout.write(`${JSON.stringify({ type: 'run', ...summary, executions, replays: run.replays.map((replay) => replay.executionId) })}\n`)
    return EXIT_CODES.completed
  }
  const style = styleFor(io.stdout, io.env)
  const out = [formatSummary(summary, { cwd: io.cwd, style, includeResult: false })]
  if (summary.source !== undefined) out.push(`  ${style.dim('workflow:'.padEnd(10))}${displayPath(summary.source, io.cwd)}`)
  if (executions.length > 1) {
    out.push('', style.bold('Executions:'))
    for (const execution of executions) out.push(`  ${execution.executionId.padEnd(16)} ${execution.kind.padEnd(7)} ${styleStanding(execution.standing, style)}`)
  }
  if (run.replays.length > 0) out.push(`  ${style.dim(`${run.replays.length} replay(s): ${run.replays.map((replay) => replay.executionId).join(', ')}`)}`)
  if (summary.retriedCalls.length > 0) {
    out.push('', style.bold('Retried calls:'))
    for (const call of summary.retriedCalls) {
      out.push(`  ${call.kind} ${call.name} (${call.id})`)
      for (const attempt of call.attempts) {
        out.push(`    attempt ${attempt.attempt}${call.kind === 'agent' ? ` ${style.dim(attempt.callId)}` : ''}: ${attempt.outcome === 'completed' ? style.green(attempt.outcome) : style.yellow(attempt.outcome)}`)
      }
    }
  }
  if (summary.gaps.length > 0) {
    out.push('', style.bold('Gaps:'))
    for (const gap of summary.gaps) out.push(`  - ${gap.tool} (${gap.criticality})${gap.reason === undefined ? '' : `: ${gap.reason}`}`)
  }
  if (summary.caveats.length > 0) {
    out.push('', style.bold('Caveats:'))
    for (const caveat of summary.caveats) out.push(`  - ${caveat}`)
  }
  out.push('', style.bold('Result:'), ...indentLines(formatResult(summary.result, summary.standing, { resultFile: summary.resultFile, cwd: io.cwd })))
  io.stdout.write(`${out.join('\n')}\n`)
  return EXIT_CODES.completed
}
