import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTriggerQueue } from '@locus/protocol'
import { type Runtime, createRuntime, createScriptedHost, defineDeferredTool, defineRemoteTool, defineWorkflow } from '@locus/runtime'
import { type RunningServer, type StartServerOptions, startServer } from '@locus/server'
import { afterEach } from 'vitest'
import { z } from 'zod'

const cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** One agent call, then its answer. */
const echo = defineWorkflow({
  name: 'echo',
  description: 'Repeats the ticket back.',
  input: z.object({ ticket: z.string().regex(/^T-\d+$/) }),
  run: async ({ input, agent }) => ({ ok: true, answer: (await agent(`echo ${input.ticket}`)).answer }),
})

/** Waits on an agent that never answers, until it is cancelled. */
const waits = defineWorkflow({ name: 'waits', run: async ({ agent }) => ({ ok: true, answer: (await agent('hang')).answer }) })

/** A journal that grows for a while: `lines` log lines, an agent call every tenth. */
const chatty = defineWorkflow({
  name: 'chatty',
  input: z.object({ lines: z.number().int().min(1).default(60), pauseMs: z.number().int().min(0).default(2) }),
  run: async ({ input, agent, log }) => {
    for (let index = 0; index < input.lines; index += 1) {
      log(`tick ${index}`)
      if (index % 10 === 0) await agent(`step ${index}`)
      else await sleep(input.pauseMs)
    }
    return { ok: true, lines: input.lines }
  },
})

/** Waits for an approval (deferred), then has a worker render (remote). */
const report = defineWorkflow({
  name: 'report',
  input: z.object({ topic: z.string() }),
  tools: {
    approve: defineDeferredTool({ input: z.object({ topic: z.string() }), output: z.object({ approved: z.boolean() }) }),
    render_report: defineRemoteTool({ input: z.object({ topic: z.string() }), output: z.object({ pages: z.number() }) }),
  },
  async run({ input, tool }) {
    const { approved } = z.object({ approved: z.boolean() }).parse(await tool('approve', { topic: input.topic }))
    if (!approved) return { ok: true, topic: input.topic, pages: 0 }
    const { pages } = z.object({ pages: z.number() }).parse(await tool('render_report', { topic: input.topic }))
    return { ok: true, topic: input.topic, pages }
  },
})

/** Waits for signal `go` (signal-with-start sends it with the start). */
const kickoff = defineWorkflow({
  name: 'kickoff',
  signals: { go: z.object({ by: z.string() }) },
  run: async ({ waitForSignal }) => ({ ok: true, go: await waitForSignal('go') }),
})

export const KEY = 'client-test-key-000001'

/** A fresh runs directory, removed after the test. */
export function tempRunsDir(): string {
  const runsDir = mkdtempSync(join(tmpdir(), 'locus-client-'))
  cleanups.push(() => {
    rmSync(runsDir, { recursive: true, force: true })
  })
  return runsDir
}

export function testRuntime(): { runtime: Runtime; workers: ReturnType<typeof createTriggerQueue> } {
  const runsDir = tempRunsDir()
  const host = createScriptedHost({
    rules: [
      { match: { prompt: 'hang' }, steps: [{ hang: true }] },
      { match: { prompt: 'step' }, steps: [{ text: 'ok', delayMs: 1 }] },
      { steps: [{ text: 'fine' }] },
    ],
  })
  const workers = createTriggerQueue()
  return { runtime: createRuntime({ workflows: [echo, waits, chatty, report, kickoff], host, runsDir, defaults: { worker: workers } }), workers }
}

export interface TestServer extends RunningServer {
  readonly runtime: Runtime
}

/** A real server on a free loopback port, with one API key; closed after the test. */
export async function testServer(options: Partial<StartServerOptions> = {}): Promise<TestServer> {
  const defaults = options.runtime === undefined ? testRuntime() : { runtime: options.runtime, workers: options.workers }
  const runtime = defaults.runtime
  const server = await startServer({ port: 0, env: {}, apiKeys: KEY, shutdownGraceMs: 100, onError: () => undefined, ...options, runtime, workers: defaults.workers })
  cleanups.push(() => server.close())
  return { ...server, runtime }
}

export async function storedJournal(runtime: Runtime, runId: string, executionId = runId) {
  const lines = []
  for await (const line of runtime.store.readLines({ runId, executionId })) lines.push(line)
  return lines
}

export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 5_000): Promise<T> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > until) throw new Error('condition not met in time')
    await sleep(20)
  }
}
