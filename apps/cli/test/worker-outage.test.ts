// `locus worker` survives its database (issue #37): started before PostgreSQL is reachable it waits and
// says so; when the connection is cut while it runs it keeps its process, and it runs queued runs once
// the database is back. The database sits behind a TCP proxy of the test's own, which is closed and
// opened again to cut and restore every connection.
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { writeFile } from 'node:fs/promises'
import { type Server, type Socket, createConnection, createServer } from 'node:net'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { enqueueRun, migrateDispatch } from '@locus/store-postgres'
import { afterAll, describe, expect, it } from 'vitest'
import { adminQuery, repoRoot, startLocus, tempDir } from './helpers.js'

const url = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
const ci = (process.env.CI ?? '') !== ''
const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')
// pg is the store's dependency, not the CLI's: load the store's copy.
interface PgClient {
  connect(): Promise<unknown>
  query(sql: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>
  end(): Promise<unknown>
}
const pg = createRequire(join(repoRoot, 'packages', 'store-postgres', 'package.json'))('pg') as { Client: new (options: { connectionString: string }) => PgClient }

/** A TCP proxy to PostgreSQL on a fixed port that can be closed (every connection cut) and opened again. */
function pgProxy(target: URL) {
  const sockets = new Set<Socket>()
  let server: Server | undefined
  let port = 0
  return {
    get port() {
      return port
    },
    async open(): Promise<void> {
      server = createServer((client) => {
        const upstream = createConnection(Number(target.port || 5432), target.hostname)
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on('error', () => undefined)
          socket.on('close', () => {
            sockets.delete(socket)
            client.destroy()
            upstream.destroy()
          })
        }
        client.pipe(upstream)
        upstream.pipe(client)
      })
      server.listen(port, '127.0.0.1')
      await once(server, 'listening')
      const address = server.address()
      if (typeof address === 'object' && address !== null) port = address.port
    },
    async close(): Promise<void> {
      for (const socket of sockets) socket.destroy()
      const closing = server
      server = undefined
      if (closing !== undefined) await new Promise((resolve) => closing.close(resolve))
    },
  }
}

function collect(child: ChildProcess): { out: () => string } {
  let text = ''
  child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()))
  child.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString()))
  return { out: () => text }
}

async function until(what: string, probe: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe('locus worker and a database that goes away', () => {
  const database = `locus_worker_outage_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  const children: ChildProcess[] = []

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL')
    await Promise.all(children.filter((child) => child.exitCode === null && child.signalCode === null).map((child) => once(child, 'exit')))
    if (url !== undefined) await adminQuery(url, `drop database if exists "${database}" with (force)`)
  })

  it.skipIf(url === undefined && !ci)('waits for PostgreSQL at start, keeps its process through a cut, and runs a queued run once it is back', async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    await adminQuery(url, `create database "${database}"`)
    const direct = new URL(url)
    direct.pathname = `/${database}`
    await migrateDispatch(direct.href)
    const proxy = pgProxy(direct)
    // Find a free port, then close it: the worker starts while nothing listens there.
    await proxy.open()
    await proxy.close()
    const viaProxy = new URL(direct.href)
    viaProxy.hostname = '127.0.0.1'
    viaProxy.port = String(proxy.port)

    const dir = await tempDir()
    await writeFile(
      join(dir, 'once.mts'),
      [`import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`, "export default defineWorkflow({ name: 'once', run: async ({ agent }) => ({ ok: true, answer: (await agent('hi')).answer }) })"].join('\n'),
    )
    await writeFile(join(dir, 'answers.json'), JSON.stringify({ rules: [{ steps: [{ text: 'hello' }] }] }))
    const worker = startLocus(['worker', '--database-url', viaProxy.href, '--workflows', dir, '--host', 'scripted', '--fixtures', join(dir, 'answers.json'), '--lease-ms', '1000'], { cwd: dir, env: { LOCUS_WORKER_DEBUG: process.env.LOCUS_WORKER_DEBUG ?? '' } })
    children.push(worker)
    const output = collect(worker)
    const alive = () => worker.exitCode === null && worker.signalCode === null

    // No database: one line says what it waits for, and the process stays.
    await until('the worker to say it waits', () => /locus: worker waiting for PostgreSQL/.test(output.out()) || !alive())
    expect(alive(), output.out()).toBe(true)
    expect(output.out().match(/waiting for PostgreSQL to migrate/g)).toHaveLength(1)
    await proxy.open()
    await until('the worker to run', () => /worker running/.test(output.out()) || !alive())
    expect(alive(), output.out()).toBe(true)

    // Every connection cut at once, for a second: the worker keeps its process.
    await proxy.close()
    await new Promise((resolve) => setTimeout(resolve, 1000))
    expect(alive(), output.out()).toBe(true)
    await proxy.open()

    const client = new pg.Client({ connectionString: direct.href })
    await client.connect()
    try {
      await enqueueRun(client as unknown as Parameters<typeof enqueueRun>[0], { runId: 'after-the-cut', workflow: 'once' })
      await until('the run to complete', async () => (await client.query('select status from locus_runs where run_id = $1', ['after-the-cut'])).rows[0]?.status === 'completed').catch((error: unknown) => {
        throw new Error(`${String(error)}: ${output.out()}`)
      })
    } finally {
      await client.end()
    }
    expect(alive(), output.out()).toBe(true)
    // graphile-worker was handed a pool with its error listeners: no warning about them.
    expect(output.out()).not.toMatch(/error handlers/)
  }, 90_000)
})
