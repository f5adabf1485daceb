import { NOTHING_RECORDED_PROBLEM, type StoredRun, recordedStart } from '@locus/runtime'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { displayPath } from '../format-summary.js'
import { type LoadedWorkflow, loadWorkflow } from '../load-workflow.js'
import { journalPathOf } from './stored-run.js'

/** What is wrong with a run that recorded nothing, and what works instead; for `resume` and `replay`. */
export function describeNothingRecorded(run: StoredRun, cwd: string): { readonly problem: string; readonly remedy: string } {
  const root = run.root
  const skipped = root.problems.filter((problem) => problem !== NOTHING_RECORDED_PROBLEM)
  const state = skipped.length > 0 ? `holds no complete run_start line (${skipped.join('; ')})` : root.linesRead === 0 ? 'is empty' : 'holds no run_start line'
  return {
    problem:
      `its journal ${displayPath(journalPathOf(root), cwd)} ${state}: nothing was recorded ` +
      '(its process stopped before the first line reached the disk, as a run with --durability none can when killed at once)',
    remedy:
      `start it again with \`locus run <workflow file> --input '<json>'\`, or run it from the start as an execution of this run ` +
      `with \`locus resume ${run.runId} --workflow <workflow file>\` (the workflow's default input is used)`,
  }
}

/**
 * Loads the workflow a recorded run came from: `--workflow <file>` when given,
 * else the file recorded in `run_start.options.source` (the root's, or the
 * latest execution's when the root recorded none).
 *
 * @throws {CliError} `RUN_NOTHING_RECORDED` when the run recorded nothing and no `--workflow` was given,
 *   `CLI_USAGE` when no execution names a file, and the loader's errors.
 */
export async function loadRecordedWorkflow(run: StoredRun, flag: string | undefined, io: CliIo, command: string): Promise<LoadedWorkflow> {
  if (flag === undefined && run.nothingRecorded) {
    const { problem, remedy } = describeNothingRecorded(run, io.cwd)
    throw new CliError('RUN_NOTHING_RECORDED', `Run ${run.runId} cannot be ${command === 'resume' ? 'resumed' : 'replayed'}: ${problem}. Instead, ${remedy}.`)
  }
  const source = flag ?? recordedStart(run).source
  if (source === undefined) {
    throw new CliError('CLI_USAGE', `Run ${run.runId} does not record its workflow file (it was started from code); pass --workflow <file> to ${command} it.`)
  }
  return loadWorkflow(source, io.cwd)
}
