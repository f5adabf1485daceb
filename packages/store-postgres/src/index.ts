export { createPostgresRunStore } from './postgres-run-store.js'
export type { LeaseState, PostgresRunStore, PostgresRunStoreOptions, RunLease, StoreMigrationResult } from './postgres-run-store.js'
export { JOURNAL_CHANNEL, STORE_MIGRATIONS } from './migrations.js'
export type { StoreMigration } from './migrations.js'
