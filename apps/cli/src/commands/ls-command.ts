import { Usd, displayUsd } from '@locus/cost'
import { RunIdError, validateRunId } from '@locus/journal'
import { type RunSummary, readStoredRun } from '@locus/runtime'
import { createFileRunStore } from '@locus/store'
import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { formatDuration } from '../format-duration.js'
import { displayPath, styleStanding } from '../format-summary.js'
import { formatTable } from '../format-table.js'
import { resolveRunsDir } from '../runs-dir.js'
import { styleFor } from '../style.js'
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

/** True when a directory's name could be a run id (anything else in the runs directory is not a run). */
function isRunId(name: string): boolean {
  try {
    validateRunId(name, 'run id')
    return true
  } catch (error) {
    if (RunIdError.isInstance(error)) return false
    throw error
  }
}

/** `locus ls`: the most recent runs in the runs directory as a table, newest first. */
export async function lsCommand(flags: LsFlags, io: CliIo): Promise<ExitCode> {
  const runsDir = resolveRunsDir(flags.runsDir, io)
  const store = createFileRunStore(runsDir)
  const runs = (await store.listRuns()).filter((run) => isRunId(run.runId)).slice(0, flags.limit ?? DEFAULT_LS_LIMIT)
  const summaries: RunSummary[] = []
  for (const run of runs) summaries.push((await readStoredRun(store, run.runId)).summary)
  if (flags.json === true) {
    for (const summary of summaries) io.stdout.write(`${JSON.stringify({ type: 'run', ...summary })}\n`)
    return EXIT_CODES.completed
  }
  if (summaries.length === 0) {
    io.stdout.write(`No runs in ${displayPath(runsDir, io.cwd)} yet. Start one with \`locus run <workflow file>\`.\n`)
    return EXIT_CODES.completed
  }
  const style = styleFor(io.stdout, io.env)
  const rows = [['RUN', 'WORKFLOW', 'STATE', 'ANSWER', 'STARTED', 'TOOK', 'CALLS', 'RETRIES', 'GAPS', 'COST']]
  for (const summary of summaries) {
    rows.push([
      summary.runId,
      summary.workflow,
      styleStanding(summary.standing, style),
      summary.answerOutcome ?? '-',
      startedCell(summary),
      summary.durationMs === undefined ? '-' : formatDuration(summary.durationMs),
      String(summary.agentCalls + summary.toolCalls),
      // The host's own LLM retries, when there were any, beside the calls' retries: never folded into them.
      summary.llmRetries > 0 ? `${summary.retries} (+${summary.llmRetries} llm)` : String(summary.retries),
      String(summary.gaps.length),
      // Dollars for a priced run (a + when some requests had no price); a run that was not priced has none.
      summary.cost === undefined ? '-' : `${displayUsd(new Usd(summary.cost.usd))}${summary.cost.unpricedRequests > 0 ? '+' : ''}`,
    ])
  }
  io.stdout.write(`${formatTable(rows.map((row, index) => (index === 0 ? row.map((cell) => style.dim(cell)) : row)))}\n`)
  return EXIT_CODES.completed
}
