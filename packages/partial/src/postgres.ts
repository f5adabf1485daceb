// The `@locus/partial/postgres` entry: the PostgreSQL outcome store. Importing it loads pg.
export { createPostgresOutcomeStore } from './postgres-outcome-store.js'
export type { PostgresOutcomeStoreOptions } from './postgres-outcome-store.js'
