import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { formatDuration } from '../format-duration.js'
import { displayPath, styleStanding } from '../format-summary.js'
import { formatTable } from '../format-table.js'
import { listRunIds, readRunRecord } from '../run-record.js'
import { resolveRunsDir } from '../runs-dir.js'
import { styleFor } from '../style.js'
import { type RunSummary, summarizeRun } from '../summarize-run.js'
import type { OutputFlags } from './run-flags.js'

/** Flags of `locus ls`. */
export interface LsFlags extends OutputFlags {
  readonly limit?: number | undefined
}

/** How many runs `locus ls` shows by default. */
export const DEFAULT_LS_LIMIT = 20

function startedCell(summary: RunSummary): string {
  return summary.startedAt === undefined ? '-' : summary.startedAt.replace('T', ' ').slice(0, 19)
}

/** `locus ls`: the most recent runs in the runs directory as a table, newest first. */
export function lsCommand(flags: LsFlags, io: CliIo): ExitCode {
  const runsDir = resolveRunsDir(flags.runsDir, io)
  const ids = listRunIds(runsDir).slice(0, flags.limit ?? DEFAULT_LS_LIMIT)
  const summaries = ids.map((id) => summarizeRun(readRunRecord(runsDir, id)))
  if (flags.json === true) {
    for (const summary of summaries) io.stdout.write(`${JSON.stringify({ type: 'run', ...summary })}\n`)
    return EXIT_CODES.completed
  }
  if (summaries.length === 0) {
    io.stdout.write(`No runs in ${displayPath(runsDir, io.cwd)} yet. Start one with \`locus run <workflow file>\`.\n`)
    return EXIT_CODES.completed
  }
  const style = styleFor(io.stdout, io.env)
  const rows = [['RUN', 'WORKFLOW', 'STATE', 'ANSWER', 'STARTED', 'TOOK', 'CALLS', 'RETRIES', 'GAPS']]
  for (const summary of summaries) {
    rows.push([
      summary.runId,
      summary.workflow,
      styleStanding(summary.standing, style),
      summary.answerOutcome ?? '-',
      startedCell(summary),
      summary.durationMs === undefined ? '-' : formatDuration(summary.durationMs),
      String(summary.agentCalls + summary.toolCalls),
      String(summary.retries),
      String(summary.gaps.length),
    ])
  }
  io.stdout.write(`${formatTable(rows.map((row, index) => (index === 0 ? row.map((cell) => style.dim(cell)) : row)))}\n`)
  return EXIT_CODES.completed
}
