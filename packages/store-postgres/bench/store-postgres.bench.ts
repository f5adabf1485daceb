// The durable step cost on PostgreSQL: a workflow of journaled tool() calls on
// the PostgreSQL store (each call commits tool_start and tool_end), against the
// floor of the same lines inserted one per transaction with plain pg, in one
// process run on the same database. Skips with a message without LOCUS_TEST_PG_URL.
import { measure, printTable, reportTarget } from '@locus/bench-kit'
import type { JournalLine } from '@locus/journal'
import { defineTool, defineWorkflow, runWorkflowScript } from '@locus/runtime'
import pg from 'pg'
import { z } from 'zod'
import { createPostgresRunStore } from '../src/index.js'

const url = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
if (url === undefined) {
  console.log('@locus/store-postgres bench: skipped, set LOCUS_TEST_PG_URL to a PostgreSQL database to run it.')
  process.exit(0)
}

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const calls = smoke ? 20 : 200
const rounds = smoke ? 1 : 5
const schema = `locus_bench_${process.pid}`

const workflow = defineWorkflow({
  name: 'bench-steps',
  tools: { step: defineTool({ input: z.object({ index: z.number() }), run: ({ index }) => ({ index, done: true }) }) },
  run: async ({ tool }) => {
    for (let index = 0; index < calls; index += 1) await tool('step', { index })
    return { ok: true }
  },
})

const store = createPostgresRunStore({ connectionString: url, schema, maxConnections: 4 })
const pool = new pg.Pool({ connectionString: url, max: 2 })
try {
  await store.migrate()
  await pool.query(`create table "${schema}".floor_lines (run_id text not null, seq bigint not null, line jsonb not null, primary key (run_id, seq))`)
  // The floor's payload: the very tool lines one run writes.
  const sample = await runWorkflowScript(workflow, { store, runId: 'sample' })
  const lines: JournalLine[] = []
  for await (const line of store.readLines({ runId: 'sample', executionId: sample.executionId })) if (line.type === 'tool_start' || line.type === 'tool_end') lines.push(line)
  if (lines.length !== calls * 2) throw new Error(`expected ${String(calls * 2)} tool lines, found ${String(lines.length)}`)

  let floorRun = 0
  let storeRun = 0
  const results = await measure(
    [
      {
        name: 'floor: one INSERT per line, each in a transaction',
        operations: calls,
        run: async () => {
          const runId = `floor-${String((floorRun += 1))}`
          const client = await pool.connect()
          try {
            for (const line of lines) {
              await client.query('begin')
              await client.query(`insert into "${schema}".floor_lines (run_id, seq, line) values ($1, $2, $3)`, [runId, line.seq, JSON.stringify(line)])
              await client.query('commit')
            }
          } finally {
            client.release()
          }
        },
      },
      { name: 'journaled tool() on the PostgreSQL store', operations: calls, run: () => runWorkflowScript(workflow, { store, runId: `run-${String((storeRun += 1))}` }) },
    ],
    { rounds, warmupRounds: smoke ? 0 : 1 },
  )
  const table = printTable(`@locus/store-postgres: ${String(calls)} tool() calls per run (per call: 2 journal lines)`, results, 'floor: one INSERT per line, each in a transaction')
  reportTarget('journaled tool() vs INSERT per line, per call', table.get('journaled tool() on the PostgreSQL store') ?? Number.NaN, 2)
} finally {
  await pool.query(`drop schema if exists "${schema}" cascade`)
  await pool.end()
  await store.close()
}
