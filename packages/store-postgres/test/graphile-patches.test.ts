// The patches this package makes to graphile-worker's compiled modules, driven through graphile-worker's
// own job query (`batchGetJobs`) with a client that loses its connection once: without the task-lookup
// patch the lost connection of the first lookup fails every later job query of the process.
import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import { patchGraphileWorker } from '../src/graphile-patches.js'

const require = createRequire(import.meta.url)

interface Query {
  readonly text: string
  readonly values: unknown[]
}
// graphile-worker's own signature, which this test calls as it is.
// eslint-disable-next-line max-params
type BatchGetJobs = (
  options: object,
  withPgClient: unknown,
  tasks: Record<string, unknown>,
  poolId: string,
  flagsToSkip: string[] | null,
  batchSize: number,
) => Promise<{ id: string; task_identifier: string }[]>

/** A client on a database that knows one task (id 7) and holds one job of it, whose first `failures` queries fail as a cut connection does. */
function flakyDatabase(failures: number) {
  const queries: Query[] = []
  let left = failures
  const client = {
    query: async (query: Query) => {
      queries.push(query)
      if (left > 0) {
        left -= 1
        throw new Error('Connection terminated unexpectedly')
      }
      if (query.text.includes('insert into')) return { rows: [] }
      if (query.text.includes('select id, identifier')) return { rows: [{ id: 7, identifier: 'locus_run' }] }
      return { rows: [{ id: '1', task_id: 7 }] }
    },
  }
  const withPgClient = Object.assign(async (callback: (c: typeof client) => Promise<unknown>) => callback(client), {
    withRetries: async (callback: (c: typeof client) => Promise<unknown>) => callback(client),
  })
  return { queries, withPgClient }
}

function sharedOptions() {
  // A fresh object per runner, as graphile-worker compiles one per `run()`.
  return {
    escapedWorkerSchema: '"graphile_worker"',
    workerSchema: 'graphile_worker',
    resolvedPreset: { worker: { preparedStatements: false, useNodeTime: false } },
    logger: { error: () => undefined, debug: () => undefined },
  }
}

describe('graphile-worker patches', () => {
  const { batchGetJobs } = require('graphile-worker/dist/sql/getJobs.js') as { batchGetJobs: BatchGetJobs }

  it('a task lookup that lost its connection is made again by the next job query, which then finds the job', async () => {
    patchGraphileWorker()
    const options = sharedOptions()
    const database = flakyDatabase(1)
    await expect(batchGetJobs(options, database.withPgClient, { locus_run: () => undefined }, 'pool-1', null, 1)).rejects.toThrow(/Connection terminated/)
    const jobs = await batchGetJobs(options, database.withPgClient, { locus_run: () => undefined }, 'pool-1', null, 1)
    expect(jobs).toEqual([{ id: '1', task_id: 7, task_identifier: 'locus_run' }])
    // The job query asked for the looked-up task id.
    expect(database.queries.at(-1)?.values[1]).toEqual([7])
  })

  it('a task lookup that succeeded is made once per runner, whatever the number of job queries', async () => {
    patchGraphileWorker()
    patchGraphileWorker()
    const options = sharedOptions()
    const database = flakyDatabase(0)
    for (let i = 0; i < 5; i += 1) await batchGetJobs(options, database.withPgClient, { locus_run: () => undefined }, 'pool-1', null, 1)
    expect(database.queries.filter((query) => query.text.includes('select id, identifier'))).toHaveLength(1)
    expect(database.queries).toHaveLength(2 + 5)
  })

  it('connection losses join the codes graphile-worker retries when it marks a job', () => {
    patchGraphileWorker()
    const { RETRYABLE_ERROR_CODES } = require('graphile-worker/dist/lib.js') as { RETRYABLE_ERROR_CODES: Record<string, unknown> }
    for (const code of ['ECONNREFUSED', 'ECONNRESET', '57P01', '08006']) expect(RETRYABLE_ERROR_CODES[code], code).toBeDefined()
  })
})
