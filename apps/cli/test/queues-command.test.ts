// `locus queues` and the waits `locus show` prints: the built binary against a real server on loopback and a runs directory.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Runtime, createRuntime, createScriptedHost, defineTool, defineWorkflow } from '@locus/runtime'
import { type RunningServer, startServer } from '@locus/server'
import { createRequire } from 'node:module'
import { enqueueRun, migrateDispatch } from '@locus/store-postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { adminQuery, jsonLines, repoRoot, runLocus } from './helpers.js'

const KEY = 'cli-queues-key-0123456789abcdef'
const gates: (() => void)[] = []
const tenantJob = defineWorkflow({
  name: 'tenant-job',
  input: z.object({ tenant: z.string() }),
  concurrency: [{ key: (input) => `tenant:${input.tenant}`, limit: 1 }],
  tools: { gate: defineTool({ input: z.object({}), run: () => new Promise<void>((resolve) => gates.push(resolve)) }) },
  async run({ tool, agent }) {
    await tool('gate', {})
    return { ok: true, answer: (await agent('go')).answer }
  },
})

let server: RunningServer
let runtime: Runtime
let runsDir: string
const remote = (...args: string[]) => runLocus([...args, '--server', server.url], { env: { LOCUS_API_KEY: KEY } })
const settled = async (condition: () => boolean) => {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5))
}

beforeAll(async () => {
  runsDir = mkdtempSync(join(tmpdir(), 'locus-cli-queues-'))
  runtime = createRuntime({ workflows: [tenantJob], host: createScriptedHost({ rules: [{ steps: [{ text: 'done' }] }] }), runsDir, rateLimits: [{ match: { provider: 'scripted' }, requestsPerMinute: 100 }] })
  server = await startServer({ runtime, port: 0, env: {}, apiKeys: KEY, shutdownGraceMs: 100, onError: () => undefined })
})

afterAll(async () => {
  await server.close()
  rmSync(runsDir, { recursive: true, force: true })
})

describe('locus queues', () => {
  it('prints per key the runs running and waiting and the oldest wait, and show says how long a run waited and for what', async () => {
    const first = await runtime.start('tenant-job', { input: { tenant: 'acme' }, runId: 'cq-first' })
    const second = runtime.start('tenant-job', { input: { tenant: 'acme' }, runId: 'cq-second' })
    await settled(() => gates.length === 1)
    await new Promise((resolve) => setTimeout(resolve, 30))

    const table = await remote('queues')
    expect(table.stderr).toBe('')
    expect(table.code).toBe(0)
    const rows = table.stdout.trim().split('\n').map((line) => line.trim().split(/\s{2,}/))
    expect(rows[0]).toEqual(['KEY', 'RUNNING', 'WAITING', 'OLDEST WAIT'])
    expect(rows).toContainEqual(['rate:scripted/*', '0', '0', '-'])
    const acme = rows.find((row) => row[0] === 'tenant:acme')
    expect(acme?.slice(0, 3)).toEqual(['tenant:acme', '1', '1'])
    expect(acme?.[3]).toMatch(/^\d+(ms|\.\ds)$/)

    const json = jsonLines((await remote('queues', '--json')).stdout)
    expect(json).toContainEqual({ type: 'queue', key: 'tenant:acme', running: 1, waiting: 1, oldestWaitMs: expect.any(Number) as number })

    gates.shift()?.()
    await first.done
    const later = await second
    await settled(() => gates.length === 1)
    gates.shift()?.()
    await later.done

    const shown = await remote('show', 'cq-second')
    expect(shown.code).toBe(0)
    expect(shown.stdout).toMatch(/queued: +\d+(ms|\.\ds) before it started \(concurrency on tenant:acme\)/)
    const local = await runLocus(['show', 'cq-second', '--runs-dir', runsDir])
    expect(local.stdout).toMatch(/queued: +\d+(ms|\.\ds) before it started \(concurrency on tenant:acme\)/)
  })

  it('without --server or --database-url it says where queues live', async () => {
    const result = await runLocus(['queues'], { env: { LOCUS_DATABASE_URL: '' } })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('locus queues needs --server <url> (a Locus server) or --database-url <url>')
  })

  const url = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
  it.skipIf(url === undefined && (process.env.CI ?? '') === '')('with --database-url reads the PostgreSQL workers\' admission tables', async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    const database = `locus_cli_queues_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    await adminQuery(url, `create database "${database}"`)
    const parsed = new URL(url)
    parsed.pathname = `/${database}`
    try {
      await migrateDispatch(parsed.href)
      // pg as @locus/store-postgres resolves it: the CLI declares no types of its own for it.
      const pg = createRequire(join(repoRoot, 'packages', 'store-postgres', 'package.json'))('pg') as { Client: new (options: { connectionString: string }) => Parameters<typeof enqueueRun>[0] & { connect(): Promise<unknown>; end(): Promise<unknown> } }
      const client = new pg.Client({ connectionString: parsed.href })
      await client.connect()
      try {
        await enqueueRun(client, { runId: 'cq-pg', workflow: tenantJob, input: { tenant: 'globex' } })
      } finally {
        await client.end()
      }
      const result = await runLocus(['queues', '--database-url', parsed.href, '--json'])
      expect(result.stderr).toBe('')
      expect(jsonLines(result.stdout)).toEqual([{ type: 'queue', key: 'tenant:globex', running: 0, waiting: 1, oldestWaitMs: expect.any(Number) as number }])
    } finally {
      await adminQuery(url, `drop database if exists "${database}" with (force)`)
    }
  })
})
