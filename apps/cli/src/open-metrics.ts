import { type OutcomeStore, openOutcomeStore } from '@locus/partial'

/**
 * Opens the outcome store runs are recorded in: PostgreSQL when
 * `LOCUS_DATABASE_URL` is set, else SQLite at `<runsDir>/outcomes.sqlite`.
 */
export function openMetrics(runsDir: string, env: Readonly<Record<string, string | undefined>>): Promise<OutcomeStore> {
  return openOutcomeStore({ runsDir, databaseUrl: env.LOCUS_DATABASE_URL })
}

/** Where the metrics go, for messages: `SQLite <path>` or `PostgreSQL`. */
export function describeMetrics(runsDir: string, env: Readonly<Record<string, string | undefined>>): string {
  const url = env.LOCUS_DATABASE_URL
  return url === undefined || url === '' ? `SQLite ${runsDir}/outcomes.sqlite` : 'PostgreSQL (LOCUS_DATABASE_URL)'
}
