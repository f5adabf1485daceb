import type { CliIo } from '../cli-io.js'
import { type ExitCode, exitCodeOf } from '../exit-codes.js'
import { formatSummary, summaryJson } from '../format-summary.js'
import { readRunRecord } from '../run-record.js'
import { styleFor } from '../style.js'
import { summarizeExecution } from '../summarize-run.js'

/**
 * Prints the end of a run (or resume) from what it left on disk, so the
 * summary says exactly what `locus show` will say later; returns the exit code
 * its disposition maps to.
 */
export function finishRun(io: CliIo, runsDir: string, runId: string, executionId: string, json: boolean): ExitCode {
  const record = readRunRecord(runsDir, runId)
  const execution = [...record.executions, ...record.replays].find((candidate) => candidate.executionId === executionId) ?? record.latest
  const summary = summarizeExecution(execution)
  const code = summary.standing === 'unfinished' ? exitCodeOf('failed') : exitCodeOf(summary.standing)
  if (json) io.stdout.write(`${JSON.stringify(summaryJson(summary, code))}\n`)
  else io.stdout.write(`\n${formatSummary(summary, { cwd: io.cwd, style: styleFor(io.stdout, io.env) })}\n`)
  return code
}
