import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Runtime, createRuntime, createScriptedHost, defineWorkflow } from '@locus/runtime'
import { afterEach } from 'vitest'
import { z } from 'zod'
import { type RunningServer, type StartServerOptions, startServer } from '../src/index.js'

const cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A fresh runs directory, removed after the test. */
export function tempRunsDir(): string {
  const directory = mkdtempSync(join(tmpdir(), 'locus-server-'))
  cleanups.push(() => {
    rmSync(directory, { recursive: true, force: true })
  })
  return directory
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Answers with its input's text after one agent call. */
export const echo = defineWorkflow({
  name: 'echo',
  description: 'Repeats the ticket back.',
  input: z.object({ ticket: z.string().min(1) }),
  run: async ({ input, agent }) => ({ ok: true, answer: (await agent(`echo ${input.ticket}`)).answer }),
})

/** Waits on an agent that never answers, until it is cancelled. */
export const waits = defineWorkflow({
  name: 'waits',
  run: async ({ agent }) => ({ ok: true, answer: (await agent('hang')).answer }),
})

/** Writes `lines` log lines (default 120), a few ms apart, with an agent call every tenth: a journal that grows for a while. */
export const chatty = defineWorkflow({
  name: 'chatty',
  input: z.object({ lines: z.number().int().min(1).max(10_000).default(120), pauseMs: z.number().int().min(0).default(4) }),
  run: async ({ input, agent, log }) => {
    for (let index = 0; index < input.lines; index += 1) {
      log(`tick ${index}`)
      if (index % 10 === 0) await agent(`step ${index}`)
      else await sleep(input.pauseMs)
    }
    return { ok: true, lines: input.lines }
  },
})

/** Throws: a failed run. */
export const fails = defineWorkflow({
  name: 'fails',
  run: () => {
    throw new Error('the ticket system is down')
  },
})

/** Completes with an Answer that has a gap: a partial answer. */
export const partial = defineWorkflow({
  name: 'partial',
  run: () => ({
    ok: true,
    answer: { text: 'half of it', found: true, partial: true, gaps: [{ tool: 'billing', criticality: 'enriching', reason: 'timed out' }], caveats: ['billing unknown'] },
  }),
})

export const WORKFLOWS = [echo, waits, chatty, fails, partial]

export function testRuntime(runsDir = tempRunsDir()): Runtime {
  const host = createScriptedHost({
    rules: [
      { match: { prompt: 'hang' }, steps: [{ hang: true }] },
      { match: { prompt: 'step' }, steps: [{ text: 'ok', delayMs: 2 }] },
      { steps: [{ text: 'fine' }] },
    ],
  })
  return createRuntime({ workflows: WORKFLOWS, host, runsDir })
}

export interface TestServer extends RunningServer {
  readonly runtime: Runtime
  /** fetch against the server, with the bearer key when given. */
  request(path: string, init?: RequestInit & { key?: string }): Promise<Response>
  /** fetch and parse the JSON body. */
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the body it expects
  json<T = Record<string, unknown>>(path: string, init?: RequestInit & { key?: string }): Promise<{ status: number; body: T; headers: Headers }>
}

/** Starts a server on a free loopback port; closed after the test. */
export async function testServer(options: Partial<StartServerOptions> = {}): Promise<TestServer> {
  const runtime = options.runtime ?? testRuntime()
  const server = await startServer({ port: 0, env: {}, shutdownGraceMs: 100, onError: () => undefined, ...options, runtime })
  cleanups.push(() => server.close())
  const request = (path: string, init: RequestInit & { key?: string } = {}): Promise<Response> => {
    const { key, ...rest } = init
    const headers = new Headers(rest.headers)
    if (key !== undefined) headers.set('authorization', `Bearer ${key}`)
    if (typeof rest.body === 'string' && !headers.has('content-type')) headers.set('content-type', 'application/json')
    return fetch(`${server.url}${path}`, { ...rest, headers })
  }
  return {
    ...server,
    close: () => server.close(),
    runtime,
    request,
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- see TestServer.json
    async json<T>(path: string, init?: RequestInit & { key?: string }) {
      const response = await request(path, init)
      const text = await response.text()
      return { status: response.status, body: (text.length === 0 ? undefined : JSON.parse(text)) as T, headers: response.headers }
    },
  }
}

/** Registers a cleanup to run after the current test. */
export function onCleanup(cleanup: () => Promise<void> | void): void {
  cleanups.push(cleanup)
}

export { sleep }
