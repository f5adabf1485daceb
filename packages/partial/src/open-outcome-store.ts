import { join } from 'node:path'
import type { OutcomeStore } from './outcome-store.js'
import { PartialInputError } from './partial-error.js'

/** File name of the SQLite outcome store inside the runs directory. */
export const OUTCOME_STORE_FILE = 'outcomes.sqlite'

/** Options of {@link openOutcomeStore}. */
export interface OpenOutcomeStoreOptions {
  /** The runs directory; the SQLite file lives here when no database URL is set. */
  readonly runsDir: string
  /** A PostgreSQL URL; when set (and not empty) the metrics go to PostgreSQL instead. */
  readonly databaseUrl?: string | undefined
  /** PostgreSQL schema for the tables. */
  readonly schema?: string
  /** Clock for default timestamps and report windows. */
  readonly clock?: () => Date
}

/**
 * Opens the outcome store the configuration asks for, migrated and ready:
 * PostgreSQL when `databaseUrl` is set, else SQLite at
 * `<runsDir>/outcomes.sqlite`.
 *
 * @example
 * ```ts
 * const store = await openOutcomeStore({ runsDir: '.locus-pi/runs', databaseUrl: process.env.LOCUS_DATABASE_URL })
 * ```
 */
export async function openOutcomeStore(options: OpenOutcomeStoreOptions): Promise<OutcomeStore> {
  if (typeof options.runsDir !== 'string' || options.runsDir.length === 0) {
    throw new PartialInputError('options.runsDir', 'give the runs directory, such as .locus-pi/runs.')
  }
  const clock = options.clock === undefined ? {} : { clock: options.clock }
  // Each driver is loaded only when it is chosen, so importing this package
  // (or the runtime, which depends on it) loads no native module.
  const store =
    options.databaseUrl !== undefined && options.databaseUrl !== ''
      ? (await import('./postgres-outcome-store.js')).createPostgresOutcomeStore({
          connectionString: options.databaseUrl,
          ...clock,
          ...(options.schema === undefined ? {} : { schema: options.schema }),
        })
      : (await import('./sqlite-outcome-store.js')).createSqliteOutcomeStore({ path: join(options.runsDir, OUTCOME_STORE_FILE), ...clock })
  try {
    await store.migrate()
  } catch (error) {
    await store.close()
    throw error
  }
  return store
}
