// Idempotency keys outlive the server: a `locus serve` killed mid-window and
// started again on the same store answers a repeated Idempotency-Key with the
// run the first request started, and starts no second one; on the runs
// directory and, with LOCUS_TEST_PG_URL, on PostgreSQL.
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { adminQuery, repoRoot, startLocus, tempDir, waitForOutput } from './helpers.js'

const url = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
const ci = (process.env.CI ?? '') !== ''
const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')
const KEY = 'serve-idempotency-key-0123456789'

const children: ChildProcess[] = []
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await once(child, 'exit')
    }
  }
})

async function workflowsDir(): Promise<string> {
  const dir = await tempDir()
  await writeFile(join(dir, 'hello.mts'), [`import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`, "export default defineWorkflow({ name: 'hello', run: ({ input }) => ({ ok: true, input }) })"].join('\n'))
  return dir
}

async function serve(dir: string, store: string[]): Promise<{ base: string; child: ChildProcess }> {
  const child = startLocus(['serve', '--workflows', dir, '--port', '0', ...store], { cwd: dir, env: { LOCUS_API_KEYS: KEY } })
  children.push(child)
  const base = (await waitForOutput(child, /at (http:\/\/\S+)/))[1] ?? ''
  return { base, child }
}

async function start(base: string, body: unknown, key: string): Promise<{ status: number; body: { runId?: string; error?: { code: string } } }> {
  const response = await fetch(`${base}/v1/workflows/hello/runs`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, 'idempotency-key': key },
  })
  return { status: response.status, body: (await response.json()) as { runId?: string; error?: { code: string } } }
}

async function runIds(base: string): Promise<string[]> {
  const response = await fetch(`${base}/v1/runs`, { headers: { authorization: `Bearer ${KEY}` } })
  return ((await response.json()) as { runs: { runId: string }[] }).runs.map((run) => run.runId)
}

/** Starts a run with a key, kills the server outright, starts another on the same store and repeats the request. */
async function survivesRestart(dir: string, store: string[]): Promise<void> {
  const first = await serve(dir, store)
  const started = await start(first.base, { input: { n: 1 } }, 'order-42')
  expect(started.status).toBe(202)
  first.child.kill('SIGKILL')
  await once(first.child, 'exit')

  const second = await serve(dir, store)
  const again = await start(second.base, { input: { n: 1 } }, 'order-42')
  expect(again.status).toBe(200)
  expect(again.body.runId).toBe(started.body.runId)
  const conflict = await start(second.base, { input: { n: 2 } }, 'order-42')
  expect(conflict.status).toBe(409)
  expect(conflict.body.error?.code).toBe('idempotency_conflict')
  expect(await runIds(second.base)).toEqual([started.body.runId])
  // Another key is another run.
  const other = await start(second.base, { input: { n: 1 } }, 'order-43')
  expect(other.status).toBe(202)
  expect(other.body.runId).not.toBe(started.body.runId)
}

describe('locus serve keeps idempotency keys across a restart', () => {
  it('on the runs directory', async () => {
    const dir = await workflowsDir()
    await survivesRestart(dir, ['--runs-dir', join(dir, 'runs')])
    const index = JSON.parse(await readFile(join(dir, 'runs', 'idempotency-keys.json'), 'utf8')) as { keys: Record<string, unknown> }
    // Kept under the key's principal (a hash of the API key), never the secret.
    expect(Object.keys(index.keys).every((key) => !key.includes(KEY))).toBe(true)
  }, 60_000)

  it.skipIf(url === undefined && !ci)('on PostgreSQL', async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    const database = `locus_serve_keys_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    await adminQuery(url, `create database "${database}"`)
    try {
      const parsed = new URL(url)
      parsed.pathname = `/${database}`
      await survivesRestart(await workflowsDir(), ['--database-url', parsed.href])
    } finally {
      for (const child of children.splice(0)) {
        child.kill('SIGKILL')
        if (child.exitCode === null && child.signalCode === null) await once(child, 'exit')
      }
      await adminQuery(url, `drop database if exists "${database}" with (force)`)
    }
  }, 90_000)
})
