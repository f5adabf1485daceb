import { type JournalLine, type RunView, createRunView } from '@locus/journal'
import { ARTIFACT_KEYS, artifactLocation } from '@locus/store'
import { type RunResult, type RunSummary, summarizeRunView } from '@locus/runtime'
import type { CliIo } from '../cli-io.js'
import { type ExitCode, exitCodeOf } from '../exit-codes.js'
import { formatSummary, summaryJson } from '../format-summary.js'
import { styleFor } from '../style.js'

/** Folds an execution's lines as they are written, for the summary at its end. */
export interface LiveSummary {
  /** Give it every line of the execution (the run's `onEvent`). */
  apply(line: JournalLine): void
  /** The summary of the execution that ended with `result`, from the lines applied: nothing is read back. */
  summarize(result: RunResult): RunSummary
}

/**
 * Starts the in-memory view a run or resume ends its output with. A resume
 * passes the run's fold so far (`StoredRun.view`): its summary then adds up
 * every execution, as `locus show` does.
 */
export function createLiveSummary(history?: RunView): LiveSummary {
  const view = history ?? createRunView()
  return {
    apply: (line) => {
      view.apply(line)
    },
    summarize: (result) =>
      summarizeRunView(view, {
        outputsReadme: artifactLocation(result.executionDir, ARTIFACT_KEYS.outputsReadme),
        resultPath: artifactLocation(result.executionDir, ARTIFACT_KEYS.result),
      }),
  }
}

/**
 * Prints the end of a run (or resume) and returns the exit code its
 * disposition maps to. The summary says what `locus show` will say later:
 * both come from one fold of the same lines.
 */
export function finishRun(io: CliIo, summary: RunSummary, result: Pick<RunResult, 'disposition'>, json: boolean): ExitCode {
  const code = exitCodeOf(summary.standing === 'unfinished' ? result.disposition : summary.standing)
  if (json) io.stdout.write(`${JSON.stringify(summaryJson(summary, code))}\n`)
  else io.stdout.write(`\n${formatSummary(summary, { cwd: io.cwd, style: styleFor(io.stdout, io.env) })}\n`)
  return code
}
