import { createRequire } from 'node:module'

// graphile-worker is pinned to 0.17.3 exactly: these patches reach into its
// compiled modules, and test/graphile-patches.test.ts fails if an upgrade moves
// what they patch.

const require = createRequire(import.meta.url)

/** What graphile-worker passes its task lookup: only the parts the lookup reads. */
interface SharedOptions {
  readonly escapedWorkerSchema: string
}
interface QueryClient {
  query(config: { text: string; values: unknown[] }): Promise<{ rows: { id: number; identifier: string }[] }>
}
type WithPgClient = ((callback: (client: QueryClient) => Promise<unknown>) => Promise<unknown>) & {
  readonly withRetries: <T>(callback: (client: QueryClient) => Promise<T>) => Promise<T>
}
/** The task ids of the names a worker runs, as graphile-worker's job query needs them. */
export interface TaskDetails {
  readonly supportedTaskIdentifierByTaskId: Record<number, string>
  readonly taskIds: number[]
}
type GetTaskDetails = (options: SharedOptions, withPgClient: WithPgClient, tasks: Record<string, unknown>) => TaskDetails | Promise<TaskDetails>

/**
 * graphile-worker retries the statements that mark a job done or failed only on
 * the error codes of its own table (serialization failures, "cannot connect
 * now", host unreachable), and it calls them without awaiting: a connection
 * refused or reset, or a session the server terminated (a restart), while a job
 * is being marked would reject where nobody listens and end the worker's
 * process. Those codes join the table, with a short backoff: marking a job is
 * safe to repeat (it matches the job's id and its lock).
 */
function retryConnectionLoss(): void {
  const lib = require('graphile-worker/dist/lib.js') as {
    RETRYABLE_ERROR_CODES?: Record<string, { minDelay: number; maxDelay: number } | undefined>
  }
  const table = lib.RETRYABLE_ERROR_CODES
  if (table === undefined) return
  for (const code of ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', '57P01', '57P02', '08000', '08001', '08003', '08004', '08006']) table[code] ??= { minDelay: 50, maxDelay: 2000 }
}

const patched = Symbol.for('locus.taskDetailsPatched')

/**
 * graphile-worker looks up the ids of its task names once per runner and keeps
 * the promise of that lookup, a rejected one included: a connection cut while
 * the first lookup is in flight (a worker started as the database restarts)
 * leaves every later job query failing with that first error, for the life of
 * the process, although the database is back. This lookup keeps answers only:
 * a failed one is made again at the next job query.
 */
function retryFailedTaskLookup(): void {
  const module = require('graphile-worker/dist/taskIdentifiers.js') as { getTaskDetails: GetTaskDetails & { [patched]?: true } }
  if (module.getTaskDetails[patched] === true) return
  const cache = new WeakMap<SharedOptions, { readonly names: string; details: TaskDetails | Promise<TaskDetails> }>()
  const getTaskDetails: GetTaskDetails & { [patched]?: true } = (options, withPgClient, tasks) => {
    const list = Object.keys(tasks)
    const names = JSON.stringify(list)
    const known = cache.get(options)
    if (known?.names === names) return known.details
    if (list.length === 0) throw new Error('graphile-worker: no runnable tasks')
    const entry: { readonly names: string; details: TaskDetails | Promise<TaskDetails> } = {
      names,
      details: withPgClient
        .withRetries(async (client) => {
          await client.query({
            text: `insert into ${options.escapedWorkerSchema}._private_tasks as tasks (identifier) select unnest($1::text[]) on conflict do nothing`,
            values: [list],
          })
          return client.query({ text: `select id, identifier from ${options.escapedWorkerSchema}._private_tasks as tasks where identifier = any($1::text[])`, values: [list] })
        })
        .then(({ rows }) => {
          const supportedTaskIdentifierByTaskId: Record<number, string> = Object.create(null) as Record<number, string>
          for (const row of rows) supportedTaskIdentifierByTaskId[row.id] = row.identifier
          const details: TaskDetails = { supportedTaskIdentifierByTaskId, taskIds: rows.map((row) => row.id) }
          entry.details = details
          return details
        })
        .catch((error: unknown) => {
          if (cache.get(options) === entry) cache.delete(options)
          throw error
        }),
    }
    cache.set(options, entry)
    return entry.details
  }
  getTaskDetails[patched] = true
  module.getTaskDetails = getTaskDetails
}

/** Applies both patches; safe to call more than once. */
export function patchGraphileWorker(): void {
  retryConnectionLoss()
  retryFailedTaskLookup()
}
