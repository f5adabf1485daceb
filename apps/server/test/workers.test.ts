import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { type TriggerQueue, createTriggerQueue } from '@locus/protocol'
import { createRuntime, defineRemoteTool, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { onCleanup, tempRunsDir, testServer } from './helpers.js'

const workerScript = fileURLToPath(new URL('./fixtures/http-worker.mjs', import.meta.url))
const WORKER_KEY = 'worker-key-0123456789abcdef'
const READER_KEY = 'reader-key-0123456789abcdef'
const KEYS = [`${WORKER_KEY}:worker`, `${READER_KEY}:runs:start+runs:read`]

const report = defineWorkflow({
  name: 'report',
  tools: {
    render_report: defineRemoteTool({
      input: z.object({ topic: z.string() }),
      output: z.object({ pages: z.number(), worker: z.string() }),
      // A retry right away: the second attempt goes to whichever worker polls next.
      retry: { timeout_secs: 30, max_retries: 3, backoff_base_secs: 0, backoff_max_secs: 0 },
    }),
  },
  run: async ({ tool }) => ({ ok: true, report: await tool('render_report', { topic: 'quarterly' }) }),
})

/** The same tool with a 1 s timeout, and the attempt that answered in its result. */
const slowReport = defineWorkflow({
  name: 'slow-report',
  tools: {
    render_report: defineRemoteTool({
      input: z.object({ topic: z.string() }),
      output: z.object({ pages: z.number(), worker: z.string(), attempt: z.number() }),
      retry: { timeout_secs: 1, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 },
    }),
  },
  run: async ({ tool }) => ({ ok: true, report: await tool('render_report', { topic: 'quarterly' }) }),
})

async function workerServer(queue: TriggerQueue) {
  const runtime = createRuntime({ workflows: [report, slowReport], runsDir: tempRunsDir(), defaults: { worker: queue } })
  onCleanup(() => queue.close())
  return testServer({ runtime, workers: queue, apiKeys: KEYS })
}

/** Starts the worker script in its own process; resolves its output lines as they come. */
function startWorker(url: string, name: string, mode: 'serve' | 'hang' | 'late'): { child: ChildProcess; lines: string[]; waitFor: (pattern: RegExp) => Promise<string> } {
  const child = spawn(process.execPath, [workerScript, url, WORKER_KEY, name, mode], { stdio: ['ignore', 'pipe', 'pipe'] })
  const lines: string[] = []
  const listeners = new Set<() => void>()
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    lines.push(...chunk.split('\n').filter((line) => line.length > 0))
    for (const listener of listeners) listener()
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  onCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGKILL')
      await exited
    }
  })
  const waitFor = (pattern: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const check = (): void => {
        const found = lines.find((line) => pattern.test(line))
        if (found === undefined) return
        listeners.delete(check)
        clearTimeout(timer)
        resolve(found)
      }
      const timer = setTimeout(() => {
        listeners.delete(check)
        reject(new Error(`worker ${name} printed no ${String(pattern)}; it printed ${JSON.stringify(lines)}, stderr ${stderr}`))
      }, 20_000)
      listeners.add(check)
      check()
    })
  return { child, lines, waitFor }
}

async function waitForPolls(queue: TriggerQueue, count: number): Promise<void> {
  for (let tries = 0; tries < 2000 && queue.stats().polling < count; tries += 1) await new Promise((resolve) => setTimeout(resolve, 5))
  expect(queue.stats().polling).toBeGreaterThanOrEqual(count)
}

interface ToolEnd {
  type: string
  tool?: string
  attempt?: number
  status?: string
  failure?: { error: string; retryable: boolean; code?: string }
}

describe('workers over HTTP', () => {
  it('a worker in another process serves a remote tool over HTTP', async () => {
    const queue = createTriggerQueue()
    const server = await workerServer(queue)
    const worker = startWorker(server.url, 'w-serve', 'serve')
    await waitForPolls(queue, 1)
    const started = await server.json<{ runId: string }>('/v1/workflows/report/runs', { method: 'POST', body: JSON.stringify({ input: null }), key: READER_KEY })
    expect(started.status).toBe(202)
    const result = await server.json<{ disposition: string; result: unknown }>(`/v1/runs/${started.body.runId}/result?wait=20`, { key: READER_KEY })
    expect(result.body).toMatchObject({ disposition: 'completed', result: { ok: true, report: { pages: 9, worker: 'w-serve' } } })
    // The worker prints what POST /v1/worker/actions answered; that output may trail the run's end.
    expect(await worker.waitFor(/^answered tool-1~\d+: /)).toMatch(/"accepted":\["tool-1~\d+"\],"ignored":\[\]/)
  })

  it('a worker killed mid-call fails that attempt as a retryable provider_error, and the retry goes to another poller', async () => {
    const queue = createTriggerQueue({ claimTimeoutMs: 1_500 })
    const server = await workerServer(queue)
    const doomed = startWorker(server.url, 'w-doomed', 'hang')
    await waitForPolls(queue, 1)
    const started = await server.json<{ runId: string }>('/v1/workflows/report/runs', { method: 'POST', body: JSON.stringify({ input: null }), key: READER_KEY })
    const runId = started.body.runId
    await doomed.waitFor(/^claimed .* attempt 1$/)
    const healthy = startWorker(server.url, 'w-healthy', 'serve')
    await waitForPolls(queue, 1)
    doomed.child.kill('SIGKILL')
    await healthy.waitFor(/^claimed .* attempt 2$/)
    const result = await server.json<{ disposition: string; result: unknown }>(`/v1/runs/${runId}/result?wait=20`, { key: READER_KEY })
    expect(result.body).toMatchObject({ disposition: 'completed', result: { report: { pages: 9, worker: 'w-healthy' } } })
    const journal = await server.request(`/v1/runs/${runId}/journal`, { key: READER_KEY })
    const ends = (await journal.text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as ToolEnd)
      .filter((line) => line.type === 'tool_end')
    expect(ends.map((line) => [line.attempt, line.status])).toEqual([
      [1, 'failed'],
      [2, 'completed'],
    ])
    expect(ends[0]?.failure).toMatchObject({ retryable: true, code: 'provider_error', error: expect.stringContaining('the worker "w-doomed" went away') })
  })

  it('a worker that answers attempt 1 after its deadline: the run takes attempt 2, and journals the late answer as ignored (issue 30, item 10)', async () => {
    const queue = createTriggerQueue()
    const server = await workerServer(queue)
    const worker = startWorker(server.url, 'w-late', 'late')
    await waitForPolls(queue, 1)
    const started = await server.json<{ runId: string }>('/v1/workflows/slow-report/runs', { method: 'POST', body: JSON.stringify({ input: null }), key: READER_KEY })
    const runId = started.body.runId
    const result = await server.json<{ disposition: string; result: unknown }>(`/v1/runs/${runId}/result?wait=20`, { key: READER_KEY })
    expect(result.body).toMatchObject({ disposition: 'completed', result: { report: { pages: 9, worker: 'w-late', attempt: 2 } } })
    expect(await worker.waitFor(/^answered tool-1~1: /)).toMatch(/"accepted":\[\],"ignored":\[\{"id":"tool-1~1","reason":"the attempt was given up on .*recorded as late and ignored"\}\]/)
    const lines = (await (await server.request(`/v1/runs/${runId}/journal`, { key: READER_KEY })).text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as ToolEnd & { level?: string; message?: string })
    expect(lines.filter((line) => line.type === 'tool_end').map((line) => [line.attempt, line.status])).toEqual([
      [1, 'timed-out'],
      [2, 'completed'],
    ])
    expect(lines.filter((line) => line.type === 'log' && line.level === 'warn').map((line) => line.message)).toEqual([
      'tool "render_report" attempt 1 answered after its deadline; the answer was ignored',
    ])
  })

  it('needs the worker scope, a worker name, and actions in the protocol format', async () => {
    const queue = createTriggerQueue()
    const server = await workerServer(queue)
    const denied = await server.json<{ error: { code: string } }>('/v1/worker/triggers?worker=w1&tools=render_report', { key: READER_KEY })
    expect(denied).toMatchObject({ status: 403, body: { error: { code: 'forbidden' } } })
    const unnamed = await server.json<{ error: { issues: string[] } }>('/v1/worker/triggers?tools=render_report', { key: WORKER_KEY })
    expect(unnamed.status).toBe(400)
    expect(unnamed.body.error.issues.join(' ')).toMatch(/query\.worker/)
    const bad = await server.json<{ error: { code: string; issues: string[] } }>('/v1/worker/actions?worker=w1', {
      method: 'POST',
      key: WORKER_KEY,
      body: JSON.stringify({ actions: [{ type: 'tool.result', id: 'tool-1~1', result: 1, extra: true }] }),
    })
    expect(bad).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } })
    expect(bad.body.error.issues).toEqual(['body.actions.0.extra: is not a field of tool.result; remove it'])
    const late = await server.json('/v1/worker/actions?worker=w1', { method: 'POST', key: WORKER_KEY, body: JSON.stringify({ actions: [{ type: 'tool.result', id: 'tool-1~1', result: 1 }] }) })
    expect(late).toMatchObject({ status: 200, body: { accepted: [], ignored: [{ id: 'tool-1~1', reason: expect.stringContaining('no open trigger') }] } })
    const empty = await server.json('/v1/worker/triggers?worker=w1&tools=render_report&wait=0', { key: WORKER_KEY })
    expect(empty).toMatchObject({ status: 200, body: { triggers: [], claimTimeoutMs: 60_000 } })
  })

  it('ends an open long poll when the server shuts down, without waiting out its wait', async () => {
    const queue = createTriggerQueue()
    const server = await workerServer(queue)
    const polling = server.json('/v1/worker/triggers?worker=w1&tools=render_report&wait=30', { key: WORKER_KEY })
    await waitForPolls(queue, 1)
    const began = Date.now()
    await server.close()
    expect(await polling).toMatchObject({ status: 200, body: { triggers: [] } })
    expect(Date.now() - began).toBeLessThan(10_000)
    expect(queue.stats().polling).toBe(0)
  })

  it('answers 404 with the setup when the server has no worker queue', async () => {
    const server = await testServer()
    const missing = await server.json<{ error: { code: string; message: string } }>('/v1/worker/triggers?worker=w1&tools=a')
    expect(missing.status).toBe(404)
    expect(missing.body.error.message).toMatch(/createTriggerQueue/)
  })
})
