import type { RunView } from '@locus/journal'
import type { RunStanding } from './run-summary.js'

/**
 * How one execution of a run stands, in the CLI's words: its disposition once
 * it wrote `run_end`; otherwise `suspended` (it stopped on purpose and a
 * resume continues the run, its deferrals still open), `taken-over` (another
 * worker took the run over from it), or `unfinished` (it stopped without a
 * word: killed, crashed, or still running).
 */
export type ExecutionStanding = RunStanding | 'taken-over' | 'suspended'

/** What the rule reads of an execution: its own fold, and its `result.json`'s disposition when the journal lost its `run_end`. */
export interface ExecutionFacts {
  readonly view: RunView
  readonly resultFile?: { readonly disposition: RunStanding } | undefined
}

/**
 * The one rule `locus show` and the server's `GET /v1/runs/{id}` share for an
 * execution that may have ended without `run_end`. `next` is the execution
 * that came after it (a resume), when there is one: it says whether this one
 * was taken over.
 */
export function executionStanding(execution: ExecutionFacts, next?: ExecutionFacts): ExecutionStanding {
  const disposition = execution.view.runEnd?.disposition ?? execution.resultFile?.disposition
  if (disposition !== undefined && disposition !== 'unfinished') return disposition
  const own = execution.view.executions().at(-1)
  if (own?.suspended === true) return 'suspended'
  if (own?.leaseLost === true || next?.view.executions()[0]?.tookOver === true) return 'taken-over'
  return 'unfinished'
}

/** Every execution's standing, in order (the root, then each resume). */
export function executionStandings(executions: readonly ExecutionFacts[]): ExecutionStanding[] {
  return executions.map((execution, index) => executionStanding(execution, executions[index + 1]))
}
