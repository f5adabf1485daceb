// GET /v1/queues and the waits of GET /v1/runs/{id}, over real HTTP on loopback, with the runs:read scope.
import { createRuntime, createScriptedHost, defineTool, defineWorkflow } from '@locus/runtime'
import { createFileRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { startServer } from '../src/index.js'
import { tempRunsDir } from './helpers.js'

/** A clock that moves only when the test moves it (the server does not depend on @locus/retry's). */
function manualClock(start: number) {
  let now = start
  const sleepers: { at: number; wake: () => void }[] = []
  const tick = () => new Promise((resolve) => setImmediate(resolve))
  const wakeDue = () => {
    for (const sleeper of sleepers.filter((one) => one.at <= now)) {
      sleepers.splice(sleepers.indexOf(sleeper), 1)
      sleeper.wake()
    }
  }
  return {
    now: () => now,
    sleep: (ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve) => {
        if (!(ms > 0) || signal?.aborted === true) {
          resolve()
          return
        }
        const sleeper = { at: now + ms, wake: resolve }
        sleepers.push(sleeper)
        signal?.addEventListener('abort', () => {
          if (sleepers.includes(sleeper)) sleepers.splice(sleepers.indexOf(sleeper), 1)
          resolve()
        })
      }),
    async advance(ms: number) {
      now += ms
      wakeDue()
      await tick()
    },
    async advanceToNextSleep() {
      await tick()
      if (sleepers.length === 0) return false
      now = Math.max(now, Math.min(...sleepers.map((one) => one.at)))
      wakeDue()
      await tick()
      return true
    },
  }
}

const ADMIN = 'queues-admin-key-0123456789abcdef'
const WRITER = 'queues-writer-key-0123456789abcde'

describe('GET /v1/queues', () => {
  it('shows per key the runs running and waiting and the oldest wait, and a run says how long it waited and for what', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1))
    const gates: (() => void)[] = []
    const tenant = defineWorkflow({
      name: 'tenant-job',
      input: z.object({ tenant: z.string() }),
      concurrency: [{ key: (input) => `tenant:${input.tenant}`, limit: 1 }],
      tools: { gate: defineTool({ input: z.object({}), run: () => new Promise<void>((resolve) => gates.push(resolve)) }) },
      async run({ tool, agent }) {
        await tool('gate', {})
        await agent('one')
        await agent('two')
        return { ok: true }
      },
    })
    const runtime = createRuntime({
      store: createFileRunStore(tempRunsDir()),
      workflows: [tenant],
      host: createScriptedHost({ rules: [{ steps: [{ text: 'fine' }] }], clock }),
      rateLimits: [{ match: {}, requestsPerMinute: 3 }],
      defaults: { clock },
    })
    const server = await startServer({ runtime, port: 0, env: { LOCUS_API_KEYS: `${ADMIN},${WRITER}:runs:start` }, onError: () => undefined })
    try {
      const get = (path: string, key = ADMIN): Promise<Response> => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${key}` } })
      const first = await runtime.start('tenant-job', { input: { tenant: 'acme' }, runId: 'q-first' })
      const second = runtime.start('tenant-job', { input: { tenant: 'acme' }, runId: 'q-second' })
      while (gates.length === 0) await new Promise((resolve) => setTimeout(resolve, 1))
      await clock.advance(1500)
      const listed = await get('/v1/queues')
      expect(listed.status).toBe(200)
      expect(await listed.json()).toEqual({
        queues: [
          { key: 'tenant:acme', running: 1, waiting: 1, oldestWaitMs: 1500 },
          { key: 'rate:*/*', running: 0, waiting: 0, oldestWaitMs: 0 },
        ],
      })
      expect((await fetch(`${server.url}/v1/queues`)).status).toBe(401)
      expect((await get('/v1/queues', WRITER)).status).toBe(403)

      gates.shift()?.()
      await first.done
      const secondHandle = await second
      while (gates.length === 0) await new Promise((resolve) => setTimeout(resolve, 1))
      gates.shift()?.()
      // Three requests a minute: the second run's second call waits for the minute to turn.
      const state = { ended: false }
      void secondHandle.done.then(() => (state.ended = true))
      while (!state.ended) if (!(await clock.advanceToNextSleep())) await new Promise((resolve) => setTimeout(resolve, 1))

      const run = (await (await get('/v1/runs/q-second')).json()) as { waits: unknown; status: string }
      expect(run.status).toBe('completed')
      expect(run.waits).toEqual({ queued: { keys: ['tenant:acme'], reason: 'concurrency', waitedMs: 1500 }, rate: { count: 1, waitedMs: 60_000 } })
      expect(((await (await get('/v1/runs/q-first')).json()) as { waits: unknown }).waits).toEqual({ queued: null, rate: { count: 0, waitedMs: 0 } })
      const spec = (await (await get('/openapi.json')).json()) as { paths: Record<string, { get?: { operationId?: string } }> }
      expect(spec.paths['/v1/queues']?.get?.operationId).toBe('listQueues')
    } finally {
      await server.close()
    }
  })
})
