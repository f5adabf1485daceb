import type { JournalLine } from '@locus/journal'
import { RunCompletedError } from './errors.js'

/**
 * Refuses a resume of a run whose latest execution ends with a completed
 * `run_end`. Called once the run is claimed (its lock or lease held), so the
 * answer cannot be overtaken by another resume.
 */
export function refuseCompleted(runId: string, latestExecutionId: string, lastLine: JournalLine | undefined): void {
  if (lastLine?.type === 'run_end' && lastLine.disposition === 'completed') throw new RunCompletedError(runId, latestExecutionId)
}
