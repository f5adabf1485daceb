// The `@locus/partial/postgres` entry: the PostgreSQL outcome store. pg (an optional peer dependency)
// is loaded when a store is created, not on import.
export { createPostgresOutcomeStore } from './postgres-outcome-store.js'
export type { PostgresOutcomeStoreOptions } from './postgres-outcome-store.js'
