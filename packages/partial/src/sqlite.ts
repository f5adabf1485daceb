// The `@locus/partial/sqlite` entry: the embedded outcome store. better-sqlite3 (an optional peer
// dependency) is loaded when a store is created, not on import.
export { createSqliteOutcomeStore } from './sqlite-outcome-store.js'
export type { SqliteOutcomeStoreOptions } from './sqlite-outcome-store.js'
