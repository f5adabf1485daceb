// Outcome metrics of runs executed by `locus worker`: recorded to the worker's database, where
// `locus report` reads them, one row per run even when a worker lost the run to a takeover.
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createRequire } from 'node:module'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { enqueueRun } from '@locus/store-postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adminQuery, repoRoot, runLocus, startLocus, tempDir, until, waitForOutput } from './helpers.js'

const url = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')

interface PgClient {
  connect(): Promise<unknown>
  query(sql: string, values?: unknown[]): Promise<{ rows: unknown[] }>
  end(): Promise<unknown>
}
const pg = createRequire(join(repoRoot, 'packages', 'store-postgres', 'package.json'))('pg') as { Client: new (options: { connectionString: string }) => PgClient }

describe('outcome metrics of runs executed by locus worker', () => {
  const ci = (process.env.CI ?? '') !== ''
  const database = `locus_worker_metrics_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  const children: ChildProcess[] = []
  let databaseUrl = ''
  let dir = ''
  let client: PgClient | undefined

  beforeAll(async () => {
    if (url === undefined) return
    await adminQuery(url, `create database "${database}"`)
    const parsed = new URL(url)
    parsed.pathname = `/${database}`
    databaseUrl = parsed.href
    dir = await tempDir()
    await writeFile(
      join(dir, 'ask.mts'),
      [
        `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        'export default defineWorkflow({',
        "  name: 'ask',",
        "  run: async ({ agent }) => ({ ok: true, answer: (await agent('ask')).answer }),",
        '})',
      ].join('\n'),
    )
    await writeFile(join(dir, 'hang.json'), JSON.stringify({ rules: [{ steps: [{ hang: true }] }] }))
    await writeFile(join(dir, 'answer.json'), JSON.stringify({ rules: [{ steps: [{ text: 'fine' }] }] }))
    const migrated = await runLocus(['db', 'migrate', '--database-url', databaseUrl])
    expect(migrated.code).toBe(0)
    client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
  }, 60_000)

  afterAll(async () => {
    for (const child of children) {
      child.kill('SIGCONT')
      child.kill('SIGKILL')
    }
    await Promise.all(children.filter((child) => child.exitCode === null && child.signalCode === null).map((child) => once(child, 'exit')))
    await client?.end()
    if (url !== undefined) await adminQuery(url, `drop database if exists "${database}" with (force)`)
  })

  const worker = async (fixtures: string): Promise<ChildProcess> => {
    const child = startLocus(['worker', '--database-url', databaseUrl, '--workflows', dir, '--host', 'scripted', '--fixtures', join(dir, fixtures), '--lease-ms', '1000'], { cwd: dir })
    children.push(child)
    await waitForOutput(child, /worker running/)
    return child
  }
  const enqueue = async (runId: string): Promise<void> => {
    await enqueueRun(client as never, { runId, workflow: 'ask' })
  }
  const rowsOf = async (sql: string, values: unknown[]): Promise<Record<string, unknown>[]> => (await (client as PgClient).query(sql, values)).rows as Record<string, unknown>[]
  const statusOf = async (runId: string): Promise<unknown> => (await rowsOf('select status from locus_runs where run_id = $1', [runId]))[0]?.status
  const outcomeRows = (runId: string): Promise<Record<string, unknown>[]> => rowsOf('select outcome, disposition, workflow from runs where run_id = $1', [runId])

  it.skipIf(url === undefined && !ci)('records each run once in the database, also a run taken over from a worker that was paused past its lease', async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    // Worker A takes the run and hangs in its agent call; then it is paused (SIGSTOP) past its lease.
    const paused = await worker('hang.json')
    await enqueue('taken-over')
    await until('worker A to start the agent call', async () => {
      const rows = await rowsOf("select 1 from locus_journal where run_id = $1 and line->>'type' = 'agent_start'", ['taken-over'])
      return rows.length > 0 ? true : undefined
    })
    paused.kill('SIGSTOP')
    // Worker B takes the run over once the lease lapses, runs the call again and completes it.
    const successor = await worker('answer.json')
    await until('worker B to complete the run', async () => ((await statusOf('taken-over')) === 'completed' ? true : undefined))
    // A run worker B executes from its start.
    await enqueue('plain')
    await until('the plain run to complete', async () => ((await statusOf('plain')) === 'completed' ? true : undefined))
    // A comes back: its lease is gone, its run is cancelled under it, and it writes no second (cancelled) outcome.
    paused.kill('SIGCONT')
    paused.kill('SIGTERM')
    successor.kill('SIGTERM')
    await Promise.all([once(paused, 'exit'), once(successor, 'exit')])

    const takeovers = await rowsOf("select line from locus_journal where run_id = $1 and line->>'type' = 'worker_takeover'", ['taken-over'])
    expect(takeovers).toHaveLength(1)
    expect(await outcomeRows('taken-over')).toEqual([{ outcome: 'complete', disposition: 'completed', workflow: 'ask' }])
    expect(await outcomeRows('plain')).toEqual([{ outcome: 'complete', disposition: 'completed', workflow: 'ask' }])
    // The seed's outcome query, through locus report on the same database, counts both.
    const report = await runLocus(['report', '--json'], { cwd: dir, env: { LOCUS_DATABASE_URL: databaseUrl } })
    expect(report.stderr).toBe('')
    expect(JSON.parse(report.stdout)).toMatchObject({ store: 'postgres', outcomes: { complete: 2 } })
  }, 90_000)
})
