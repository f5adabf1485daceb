// DBOS Transact against Locus on the same PostgreSQL, in one process run: N
// sequential steps, each returning a small object, as DBOS steps in a DBOS
// workflow (its own database, locus_bench_dbos_<pid>) and as journaled tool()
// calls on Locus's PostgreSQL store. DBOS commits each step's output before the
// step returns; Locus's sink group-commits in the background, so a second Locus
// row flushes the store after every call for a like-for-like comparison.
// Skips with a message without LOCUS_TEST_PG_URL.
import { DBOS } from '@dbos-inc/dbos-sdk'
import { measure, printTable, reportTarget } from '@locus/bench-kit'
import { defineTool, defineWorkflow, runWorkflowScript } from '@locus/runtime'
import type { ExecutionWriter } from '@locus/store'
import { type PostgresRunStore, createPostgresRunStore } from '@locus/store-postgres'
import pg from 'pg'
import { z } from 'zod'

const url = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
if (url === undefined) {
  console.log('@locus/bench postgres-steps: skipped, set LOCUS_TEST_PG_URL to a PostgreSQL database to run it.')
  process.exit(0)
}

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const calls = smoke ? 20 : 200
const rounds = smoke ? 1 : 5
const dbosDatabase = `locus_bench_dbos_${String(process.pid)}`
const schema = `locus_bench_steps_${String(process.pid)}`

function databaseUrl(base: string, name: string): string {
  const parsed = new URL(base)
  parsed.pathname = `/${name}`
  return parsed.toString()
}

async function admin(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}

const store = createPostgresRunStore({ connectionString: url, schema, maxConnections: 4 })
const flushEvery = { current: false }
// The root writer of the run in flight, so the workflow can wait for its lines to commit.
let rootWriter: ExecutionWriter | undefined
const capturing: PostgresRunStore = {
  ...store,
  createExecution: async (create) => {
    const writer = await store.createExecution(create)
    if (create.kind === 'root') rootWriter = writer
    return writer
  },
}
const workflow = defineWorkflow({
  name: 'bench-steps',
  tools: { step: defineTool({ input: z.object({ index: z.number() }), run: ({ index }) => ({ index, done: true }) }) },
  run: async ({ tool }) => {
    for (let index = 0; index < calls; index += 1) {
      await tool('step', { index })
      // The like-for-like row: wait for this call's lines to commit, as a DBOS step does.
      if (flushEvery.current) await rootWriter?.flush()
    }
    return { ok: true }
  },
})

const dbosWorkflow = DBOS.registerWorkflow(
  async (count: number) => {
    for (let index = 0; index < count; index += 1) await DBOS.runStep(() => Promise.resolve({ index, done: true }), { name: 'step' })
    return { ok: true }
  },
  { name: 'benchSteps' },
)

await admin(`drop database if exists "${dbosDatabase}"`)
await admin(`create database "${dbosDatabase}"`)
try {
  DBOS.setConfig({ name: 'locus-bench', systemDatabaseUrl: databaseUrl(url, dbosDatabase), logLevel: 'error' })
  await DBOS.launch()
  await store.migrate()
  let locusRun = 0
  let flushedRun = 0
  let dbosRun = 0
  const results = await measure(
    [
      {
        name: 'DBOS Transact: DBOS.runStep in a workflow',
        operations: calls,
        run: async () => {
          const handle = await DBOS.startWorkflow(dbosWorkflow, { workflowID: `dbos-${String(process.pid)}-${String((dbosRun += 1))}` })(calls)
          await handle.getResult()
        },
      },
      {
        name: 'Locus: journaled tool() (group commit)',
        operations: calls,
        run: async () => {
          flushEvery.current = false
          await runWorkflowScript(workflow, { store: capturing, runId: `locus-${String((locusRun += 1))}` })
        },
      },
      {
        name: 'Locus: journaled tool(), flushed per call',
        operations: calls,
        run: async () => {
          flushEvery.current = true
          await runWorkflowScript(workflow, { store: capturing, runId: `flushed-${String((flushedRun += 1))}` })
        },
      },
    ],
    { rounds, warmupRounds: smoke ? 0 : 1 },
  )
  const table = printTable(`DBOS Transact vs Locus on PostgreSQL: ${String(calls)} sequential steps per workflow`, results, 'DBOS Transact: DBOS.runStep in a workflow')
  reportTarget('Locus tool() vs DBOS step, per step (group commit)', table.get('Locus: journaled tool() (group commit)') ?? Number.NaN, 1)
  reportTarget('Locus tool() vs DBOS step, per step (flushed per call)', table.get('Locus: journaled tool(), flushed per call') ?? Number.NaN, 1)
} finally {
  await DBOS.shutdown()
  const cleanup = new pg.Client({ connectionString: url })
  await cleanup.connect()
  await cleanup.query(`drop schema if exists "${schema}" cascade`)
  await cleanup.end()
  await store.close()
  await admin(`drop database if exists "${dbosDatabase}" with (force)`)
}
