/**
 * Starts `@dwmkerr/mock-llm` (a maintained third-party OpenAI-compatible mock
 * server, pinned as a dev dependency) as a child process on a free loopback
 * port, and drives its rules over its `/config` endpoint. The host's
 * end-to-end tests run against it as well as against our own loopback server,
 * so the wire format and status codes are not only the ones we wrote.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { dirname, join } from 'node:path'

/** One rule of mock-llm's configuration; the last rule that matches answers. */
export interface MockLlmRule {
  readonly path: string
  readonly method?: string
  /** A JMESPath expression over `{ body, headers, method, path, query }`. */
  readonly match?: string
  /** Matches only the n-th request to this path (from 0). */
  readonly sequence?: number
  readonly response: { readonly status: number; readonly content: string }
}

export interface MockLlmConfig {
  readonly rules: readonly MockLlmRule[]
  readonly streaming?: { readonly chunkSize: number; readonly chunkIntervalMs: number }
}

export interface MockLlm {
  /** `http://127.0.0.1:<port>/v1` */
  readonly baseURL: string
  readonly process: ChildProcess
  /** Replaces the rules and resets the sequence counters; without `streaming`, mock-llm's defaults (50 characters every 50 ms). */
  configure(config: MockLlmConfig): Promise<void>
  /** Freezes the server (SIGSTOP): connections are accepted by the kernel and never answered. */
  freeze(): void
  /** Lets a frozen server run again (SIGCONT). */
  thaw(): void
  /** Kills the server (SIGKILL) and waits until it is gone. */
  kill(): Promise<void>
}

const require = createRequire(import.meta.url)
const mockLlmMain = join(dirname(require.resolve('@dwmkerr/mock-llm/package.json')), 'dist', 'main.js')

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      probe.close(() => {
        resolve(port)
      })
    })
  })
}

/** A chat completion body for a rule's `content`, with the text the assistant answers. */
export function completion(text: string, finishReason = 'stop'): string {
  return JSON.stringify({
    id: 'chatcmpl-mock',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'mock-model',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: finishReason }],
    usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 },
  })
}

/** An OpenAI-style error body for a rule's `content`. */
export function errorBody(message: string, type: string, code: string | null = null): string {
  return JSON.stringify({ error: { message, type, param: null, code } })
}

/** A rule on the chat completions path. */
export function chatRule(status: number, content: string, extra: Partial<Pick<MockLlmRule, 'match' | 'sequence'>> = {}): MockLlmRule {
  return { path: '/v1/chat/completions', method: 'POST', ...extra, response: { status, content } }
}

/** Starts mock-llm on a free loopback port and waits until `/health` answers. */
export async function startMockLlm(): Promise<MockLlm> {
  const port = await freePort()
  const child = spawn(process.execPath, [mockLlmMain], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: 'ignore',
  })
  const origin = `http://127.0.0.1:${port}`
  const exited = new Promise<void>((resolve) => child.once('exit', () => {
    resolve()
  }))
  for (let tries = 0; ; tries += 1) {
    if (child.exitCode !== null) throw new Error(`mock-llm exited with code ${child.exitCode} before it was ready`)
    try {
      const response = await fetch(`${origin}/health`)
      if (response.ok) break
    } catch {
      // Not listening yet.
    }
    if (tries > 200) {
      child.kill('SIGKILL')
      throw new Error('mock-llm did not answer /health within 10 s')
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return {
    baseURL: `${origin}/v1`,
    process: child,
    async configure(config) {
      // DELETE resets the sequence counters; POST then replaces the rules.
      await fetch(`${origin}/config`, { method: 'DELETE' })
      // A posted configuration replaces the whole of it, and mock-llm fails a stream (HTTP 500) when `streaming` is missing.
      const body = JSON.stringify({ streaming: { chunkSize: 50, chunkIntervalMs: 50 }, ...config })
      const response = await fetch(`${origin}/config`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      if (!response.ok) throw new Error(`mock-llm refused the configuration: HTTP ${response.status}`)
    },
    freeze: () => {
      child.kill('SIGSTOP')
    },
    thaw: () => {
      child.kill('SIGCONT')
    },
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGCONT')
        child.kill('SIGKILL')
      }
      await exited
    },
  }
}
