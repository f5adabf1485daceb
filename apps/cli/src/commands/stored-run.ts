import { validateRunId } from '@locus/journal'
import { type ReadStoredRunOptions, type StoredExecution, type StoredRun, readStoredRun } from '@locus/runtime'
import { type ExecutionInfo, type RunStore, RunNotFoundError, createFileRunStore } from '@locus/store'

/** Checks the id as `run --run-id` does, and says how to look elsewhere when the run is not there. */
async function inRunsDir<T>(runsDir: string, runId: string, read: (store: RunStore) => Promise<T>): Promise<T> {
  validateRunId(runId, 'run id')
  try {
    return await read(createFileRunStore(runsDir))
  } catch (error) {
    if (RunNotFoundError.isInstance(error)) throw new RunNotFoundError(runId, `${runsDir} (pass --runs-dir for another directory)`)
    throw error
  }
}

/**
 * Reads a run from the runs directory through the file store, folded by the
 * runtime (`readStoredRun`).
 *
 * @throws {RunIdError} `RUN_ID_INVALID`, stating the id rule, when `runId` could not name a run.
 * @throws {RunNotFoundError} `RUN_NOT_FOUND` when there is no such run.
 */
export function openStoredRun(runsDir: string, runId: string, options: ReadStoredRunOptions = {}): Promise<StoredRun> {
  return inRunsDir(runsDir, runId, (store) => readStoredRun(store, runId, options))
}

/** A run's executions without reading their journals, and the store that reads them; throws as {@link openStoredRun}. */
export function listStoredExecutions(runsDir: string, runId: string): Promise<{ readonly store: RunStore; readonly executions: ExecutionInfo[] }> {
  return inRunsDir(runsDir, runId, async (store) => ({ store, executions: await store.listExecutions(runId) }))
}

/** Where an execution's journal is, as its store names it (the file store: the journal file). */
export function journalPathOf(execution: Pick<StoredExecution, 'info'>): string {
  return execution.info.journalLocation ?? execution.info.location
}
