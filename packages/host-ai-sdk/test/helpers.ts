import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { HostTool, SessionRequest } from '@locus/runtime'
import { afterEach } from 'vitest'
import { type OpenAiCompatibleTestServer, type OpenAiCompatibleTestServerOptions, createOpenAiCompatibleTestServer } from './openai-compatible-server.js'

const directories: string[] = []
const servers: OpenAiCompatibleTestServer[] = []

afterEach(async () => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true })
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

/** A fresh temp directory removed after the test. */
export function tempDir(prefix = 'locus-host-ai-sdk-'): string {
  const directory = mkdtempSync(join(tmpdir(), prefix))
  directories.push(directory)
  return directory
}

/** A loopback test server closed after the test. */
export async function startServer(options: OpenAiCompatibleTestServerOptions = {}): Promise<OpenAiCompatibleTestServer> {
  const server = await createOpenAiCompatibleTestServer(options)
  servers.push(server)
  return server
}

/** A session request as the runtime would build it for one physical attempt, with an artifact sink that keeps what the host writes in `written`. */
export function sessionRequest(overrides: Partial<SessionRequest> = {}): SessionRequest & { readonly written: Map<string, string> } {
  const written = new Map<string, string>()
  return {
    written,
    runId: 'run-test',
    callId: 'call-1-a1',
    logicalCallId: 'call-1',
    attempt: 1,
    agent: 'default',
    agentConfig: undefined,
    label: undefined,
    phase: undefined,
    budgets: { maxToolCalls: 20, maxOutputTokens: 8000, maxAnswerChars: 40_000 },
    tools: [] as HostTool[],
    artifacts: {
      write: (name, text) => {
        written.set(name, text)
      },
    },
    ...overrides,
  }
}

/** Yields to the event loop (I/O included) until `predicate` holds; never moves any clock. */
export async function waitUntil(predicate: () => boolean, what = 'condition'): Promise<void> {
  for (let round = 0; round < 200_000; round += 1) {
    if (predicate()) return
    await new Promise((resolve) => setImmediate(resolve))
  }
  throw new Error(`gave up waiting for ${what}`)
}

/** The JSON lines of a file. */
export function readJsonLines(path: string): Array<Record<string, unknown>> {
  return parseJsonLines(readFileSync(path, 'utf8'))
}

/** The JSON lines of a text (an artifact a host wrote, say). */
export function parseJsonLines(text: string): Array<Record<string, unknown>> {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}

/** A controller whose signal a turn can be given. */
export function turnSignal(): { signal: AbortSignal; abort: () => void } {
  const controller = new AbortController()
  return { signal: controller.signal, abort: () => { controller.abort() } }
}
