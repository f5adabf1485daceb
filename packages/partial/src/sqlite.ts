// The `@locus/partial/sqlite` entry: the embedded outcome store. Importing it loads better-sqlite3.
export { createSqliteOutcomeStore } from './sqlite-outcome-store.js'
export type { SqliteOutcomeStoreOptions } from './sqlite-outcome-store.js'
