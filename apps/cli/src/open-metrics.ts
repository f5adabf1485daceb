import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { OUTCOME_STORE_FILE, type OutcomeStore, openOutcomeStore } from '@locus/partial'

/**
 * Opens the outcome store runs are recorded in: PostgreSQL when
 * `LOCUS_DATABASE_URL` is set, else SQLite at `<runsDir>/outcomes.sqlite`.
 */
export function openMetrics(runsDir: string, env: Readonly<Record<string, string | undefined>>): Promise<OutcomeStore> {
  return openOutcomeStore({ runsDir, databaseUrl: env.LOCUS_DATABASE_URL })
}

/**
 * Opens the outcome store for reading, writing nothing under the runs
 * directory (which may be read-only, or someone else's): PostgreSQL as
 * {@link openMetrics} does when `LOCUS_DATABASE_URL` is set; else a private
 * copy of `<runsDir>/outcomes.sqlite` (and its write-ahead log) in a
 * temporary directory, or an empty store there when the file does not exist.
 * Closing the store removes the copy.
 *
 * SQLite cannot open a database in WAL mode read-only where it may not
 * create the `-shm` file beside it, so reading a copy is what lets
 * `locus report` work on a read-only runs directory.
 */
export async function openMetricsForReading(runsDir: string, env: Readonly<Record<string, string | undefined>>): Promise<OutcomeStore> {
  const url = env.LOCUS_DATABASE_URL
  if (url !== undefined && url !== '') return openMetrics(runsDir, env)
  const copyDir = mkdtempSync(join(tmpdir(), 'locus-report-'))
  const removeCopy = (): void => {
    rmSync(copyDir, { recursive: true, force: true })
  }
  try {
    const source = join(runsDir, OUTCOME_STORE_FILE)
    if (existsSync(source)) {
      copyFileSync(source, join(copyDir, OUTCOME_STORE_FILE))
      // Commits not yet checkpointed into the file live in its write-ahead log.
      if (existsSync(`${source}-wal`)) copyFileSync(`${source}-wal`, join(copyDir, `${OUTCOME_STORE_FILE}-wal`))
    }
    const store = await openOutcomeStore({ runsDir: copyDir })
    return {
      kind: store.kind,
      migrate: () => store.migrate(),
      recordRun: (run) => store.recordRun(run),
      recordRuns: (runs) => store.recordRuns(runs),
      recordGaps: (runId, gaps) => store.recordGaps(runId, gaps),
      outcomeReport: (options) => store.outcomeReport(options),
      gapsReport: (options) => store.gapsReport(options),
      costReport: (options) => store.costReport(options),
      dailyReport: (options) => store.dailyReport(options),
      async close() {
        try {
          await store.close()
        } finally {
          removeCopy()
        }
      },
    }
  } catch (error) {
    removeCopy()
    throw error
  }
}

/** Where the metrics go, for messages: `SQLite <path>` or `PostgreSQL`. */
export function describeMetrics(runsDir: string, env: Readonly<Record<string, string | undefined>>): string {
  const url = env.LOCUS_DATABASE_URL
  return url === undefined || url === '' ? `SQLite ${runsDir}/outcomes.sqlite` : 'PostgreSQL (LOCUS_DATABASE_URL)'
}
