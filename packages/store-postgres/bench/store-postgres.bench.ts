// The durable step cost on PostgreSQL: a workflow of journaled tool() calls on
// the PostgreSQL store (each call commits tool_start and tool_end), against the
// floor of the same lines inserted one per transaction with plain pg, in one
// process run on the same database. Then the cost of fenced starts (issue #37):
// the same workflow on a store fenced by a lease, with each call's start line
// committed through the fence before the call runs, against the same fenced
// store with beforeDispatch() taken away (tool() as it was: group commit only),
// sequential calls and a parallel fan-out. Skips with a message without LOCUS_TEST_PG_URL.
import { measure, printTable, reportTarget } from '@locus/bench-kit'
import type { JournalLine } from '@locus/journal'
import { type WorkflowDefinition, defineTool, defineWorkflow, runWorkflowScript } from '@locus/runtime'
import type { ExecutionWriter } from '@locus/store'
import pg from 'pg'
import { z } from 'zod'
import { type PostgresRunStore, createPostgresRunStore } from '../src/index.js'

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

/** The same calls, eight at a time: concurrent starts share one fenced commit. */
const fanOut = defineWorkflow({
  name: 'bench-fan-out',
  tools: { step: defineTool({ input: z.object({ index: z.number() }), run: ({ index }) => ({ index, done: true }) }) },
  run: async ({ tool, parallel }) => {
    for (let index = 0; index < calls; index += 8) {
      await parallel(Array.from({ length: Math.min(8, calls - index) }, (_, offset) => () => tool('step', { index: index + offset })))
    }
    return { ok: true }
  },
})

/** Sequential calls of a tool that takes 2 ms, like a quick call to a local service: the round trip against real work. */
const slowSteps = defineWorkflow({
  name: 'bench-slow-steps',
  tools: { step: defineTool({ input: z.object({ index: z.number() }), run: async ({ index }) => (await new Promise((resolve) => setTimeout(resolve, 2)), { index, done: true }) }) },
  run: async ({ tool }) => {
    for (let index = 0; index < calls; index += 1) await tool('step', { index })
    return { ok: true }
  },
})

/** A store whose writers have no beforeDispatch(): tool() as it was before fenced starts, group commit only. */
function withoutFencedStarts(fenced: PostgresRunStore): PostgresRunStore {
  return Object.assign(Object.create(fenced) as PostgresRunStore, {
    async createExecution(options: Parameters<PostgresRunStore['createExecution']>[0]): Promise<ExecutionWriter> {
      const writer = await fenced.createExecution(options)
      return {
        runId: writer.runId,
        executionId: writer.executionId,
        kind: writer.kind,
        location: writer.location,
        runLocation: writer.runLocation,
        artifacts: writer.artifacts,
        get lastSeq() {
          return writer.lastSeq
        },
        append: (input) => writer.append(input),
        flush: () => writer.flush(),
        close: () => writer.close(),
      }
    },
  })
}

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

  // Fenced starts: every run under a lease of its own, as a worker runs it.
  let leased = 0
  const underLease = async (flow: WorkflowDefinition, fencedStarts: boolean): Promise<void> => {
    const runId = `leased-${String((leased += 1))}`
    const lease = await store.acquireLease(runId, 'bench-worker', 60_000)
    if (lease === undefined) throw new Error(`no lease for ${runId}`)
    const fenced = store.fenced(lease)
    const result = await runWorkflowScript(flow, { store: fencedStarts ? fenced : withoutFencedStarts(fenced), runId })
    if (result.disposition !== 'completed') throw new Error(`${runId} ended ${result.disposition}`)
  }
  const fencedResults = await measure(
    [
      { name: 'sequential tool(), group commit only (as before)', operations: calls, run: () => underLease(workflow, false) },
      { name: 'sequential tool(), start committed through the fence', operations: calls, run: () => underLease(workflow, true) },
      { name: 'fan-out of 8, group commit only (as before)', operations: calls, run: () => underLease(fanOut, false) },
      { name: 'fan-out of 8, start committed through the fence', operations: calls, run: () => underLease(fanOut, true) },
      { name: 'sequential 2 ms tool(), group commit only (as before)', operations: calls, run: () => underLease(slowSteps, false) },
      { name: 'sequential 2 ms tool(), start committed through the fence', operations: calls, run: () => underLease(slowSteps, true) },
    ],
    { rounds, warmupRounds: smoke ? 0 : 1 },
  )
  const sequential = printTable(`@locus/store-postgres: fenced starts, ${String(calls)} sequential tool() calls per leased run`, fencedResults.slice(0, 2), 'sequential tool(), group commit only (as before)')
  reportTarget('fenced start vs tool() as before, sequential, per call', sequential.get('sequential tool(), start committed through the fence') ?? Number.NaN, 1.3)
  const parallelTable = printTable(`@locus/store-postgres: fenced starts, ${String(calls)} tool() calls eight at a time per leased run`, fencedResults.slice(2, 4), 'fan-out of 8, group commit only (as before)')
  reportTarget('fenced start vs tool() as before, fan-out of 8, per call', parallelTable.get('fan-out of 8, start committed through the fence') ?? Number.NaN, 1.3)
  const slowTable = printTable(`@locus/store-postgres: fenced starts, ${String(calls)} sequential 2 ms tool() calls per leased run`, fencedResults.slice(4), 'sequential 2 ms tool(), group commit only (as before)')
  reportTarget('fenced start vs tool() as before, sequential 2 ms tool, per call', slowTable.get('sequential 2 ms tool(), start committed through the fence') ?? Number.NaN, 1.3)
} finally {
  await pool.query(`drop schema if exists "${schema}" cascade`)
  await pool.end()
  await store.close()
}
