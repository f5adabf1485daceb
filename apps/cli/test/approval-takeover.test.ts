// An approval outlives the processes around it (issue #36): a run waiting on a
// deferred tool under `locus serve --database-url`, executed by a `locus
// worker`, keeps its deferral id, its callback URL and its pending state
// after the server restarts and after its worker is SIGKILLed and another
// takes the run over; the URL then settles it and the run completes.
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { adminQuery, repoRoot, startLocus, tempDir, until, waitForOutput } from './helpers.js'

const url = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
const ci = (process.env.CI ?? '') !== ''
const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')
const zodEntry = join(repoRoot, 'packages', 'runtime', 'node_modules', 'zod', 'index.js')
const CALLBACK_SECRET = 'approval-takeover-secret-0001'

interface Listed {
  readonly deferredId: string
  readonly tool: string
  readonly expiresAt: string | null
  readonly callbackUrl?: string
}

describe('an approval across a server restart and a worker takeover', () => {
  const database = `locus_approval_takeover_${String(process.pid)}_${Math.random().toString(36).slice(2, 8)}`
  const children = new Set<ChildProcess>()
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL')
    await Promise.all([...children].filter((child) => child.exitCode === null && child.signalCode === null).map((child) => once(child, 'exit')))
    if (url !== undefined) await adminQuery(url, `drop database if exists "${database}" with (force)`)
  })

  it.skipIf(url === undefined && !ci)('keeps the deferral id, callback URL and pending state, and the URL settles it after both', async () => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    await adminQuery(url, `create database "${database}"`)
    const parsed = new URL(url)
    parsed.pathname = `/${database}`
    const databaseUrl = parsed.href
    const dir = await tempDir()
    await writeFile(
      join(dir, 'countersign.mts'),
      [
        `import { defineDeferredTool, defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        `import { z } from ${JSON.stringify(zodEntry)}`,
        'export default defineWorkflow({',
        "  name: 'countersign',",
        "  tools: { sign_off: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },",
        "  run: async ({ tool }) => ({ ok: true, decision: await tool('sign_off', { amount: 40 }) }),",
        '})',
      ].join('\n'),
    )
    const start = (args: readonly string[]): ChildProcess => {
      const child = startLocus(args, { cwd: dir })
      children.add(child)
      child.once('exit', () => children.delete(child))
      return child
    }
    const startWorker = async (): Promise<ChildProcess> => {
      const worker = start(['worker', '--database-url', databaseUrl, '--workflows', dir, '--lease-ms', '2000'])
      await waitForOutput(worker, /worker running/)
      return worker
    }
    const startServer = async (): Promise<{ server: ChildProcess; base: string }> => {
      const server = start(['serve', '--database-url', databaseUrl, '--workflows', dir, '--port', '0', '--callback-secret', CALLBACK_SECRET])
      return { server, base: (await waitForOutput(server, /at (http:\/\/\S+)/))[1] ?? '' }
    }
    const kill = async (child: ChildProcess, signal: NodeJS.Signals): Promise<void> => {
      const exited = once(child, 'exit')
      child.kill(signal)
      await exited
    }

    const worker = await startWorker()
    let { server, base } = await startServer()
    const api = async (path: string, init?: { method?: string; body?: unknown }): Promise<{ status: number; body: Record<string, unknown> }> => {
      const response = await fetch(`${base}${path}`, {
        method: init?.method ?? 'GET',
        ...(init?.body === undefined ? {} : { body: JSON.stringify(init.body), headers: { 'content-type': 'application/json' } }),
      })
      return { status: response.status, body: (await response.json()) as Record<string, unknown> }
    }
    const listed = async (runId: string): Promise<Listed[]> => (await api(`/v1/runs/${runId}/deferred`)).body.deferred as Listed[]

    const started = await api('/v1/workflows/countersign/runs', { method: 'POST', body: {} })
    expect(started.status).toBe(202)
    const runId = started.body.runId as string
    const first = await until('the worker to open the deferral', async () => (await listed(runId))[0])
    expect(first.callbackUrl?.startsWith(`${base}/v1/callbacks/deferred/${runId}/${first.deferredId}?expires=`)).toBe(true)
    const path = (listing: Listed): string => {
      const parsedUrl = new URL(listing.callbackUrl ?? '')
      return `${parsedUrl.pathname}${parsedUrl.search}`
    }

    // The server restarts with the same secret: the same deferral, the same URL (its path: the port is new), still pending.
    await kill(server, 'SIGTERM')
    ;({ server, base } = await startServer())
    const afterRestart = await listed(runId)
    expect(afterRestart.map((deferral) => ({ ...deferral, callbackUrl: path(deferral) }))).toEqual([{ ...first, callbackUrl: path(first) }])

    // The worker dies mid-wait; another worker takes the run over (at its lease's end, or when the answer re-queues a parked run).
    await kill(worker, 'SIGKILL')
    await startWorker()
    const afterTakeover = await listed(runId)
    expect(afterTakeover.map((deferral) => ({ ...deferral, callbackUrl: path(deferral) }))).toEqual([{ ...first, callbackUrl: path(first) }])
    expect((await api(`/v1/runs/${runId}`)).body.status).toMatch(/^(running|waiting)$/)

    // The URL handed out before both settles the deferral with no API key, and the run completes on the new worker.
    const settled = await api(path(first), { method: 'POST', body: { result: { approved: true } } })
    expect(settled.status).toBe(200)
    const result = await until('the run to end', async () => {
      const answered = await api(`/v1/runs/${runId}/result?wait=5`)
      return answered.status === 200 ? answered.body : undefined
    }, 60_000)
    expect(result).toMatchObject({ ok: true, result: { ok: true, decision: { approved: true } } })
    const executions = (await api(`/v1/runs/${runId}`)).body.executions as { executionId: string; kind: string }[]
    // The run went on in a later execution, on the new worker.
    expect(executions.length).toBeGreaterThan(1)
    const journal = (await (await fetch(`${base}/v1/runs/${runId}/journal?execution=${executions.at(-1)?.executionId ?? ''}`)).text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(journal.filter((line) => line.type === 'deferred_settled')).toEqual([expect.objectContaining({ deferredId: first.deferredId, decidedBy: 'callback', via: 'callback', outcome: 'resolved' })])
  }, 120_000)
})
