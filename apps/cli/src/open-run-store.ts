import { type RunStore, createFileRunStore } from '@locus/store'
import { createPostgresRunStore } from '@locus/store-postgres'
import { CliError } from './cli-error.js'
import type { CliIo } from './cli-io.js'
import { resolveRunsDir } from './runs-dir.js'

/**
 * The store a command's flags name: PostgreSQL with `--database-url`, else
 * the runs directory. It never migrates: a command that reads or answers a
 * run must not change the schema of the database it was pointed at.
 */
export function openRunStore(
  flags: { readonly runsDir?: string | undefined; readonly databaseUrl?: string | undefined },
  io: CliIo,
  options: { readonly maxConnections: number },
): { store: RunStore; close: () => Promise<void> } {
  if (flags.databaseUrl !== undefined) {
    if (flags.runsDir !== undefined) throw new CliError('CLI_USAGE', 'Pass --runs-dir or --database-url, not both: the runs live in one store.')
    if (!/^postgres(ql)?:\/\//.test(flags.databaseUrl)) throw new CliError('CLI_USAGE', '--database-url must be a postgres:// or postgresql:// URL.')
    const store = createPostgresRunStore({ connectionString: flags.databaseUrl, migrate: false, maxConnections: options.maxConnections })
    return { store, close: () => store.close() }
  }
  return { store: createFileRunStore(resolveRunsDir(flags.runsDir, io)), close: () => Promise.resolve() }
}
