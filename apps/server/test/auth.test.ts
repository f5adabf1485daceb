import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { JOURNAL_LINE_TYPES } from '@locus/journal'
import { EventSource } from 'eventsource'
import { describe, expect, it } from 'vitest'
import { ServerOptionsError, startServer } from '../src/index.js'
import { onCleanup, tempRunsDir, testRuntime, testServer } from './helpers.js'

const run = promisify(execFile)
const SECRET = 'file-key-0123456789abcdef'
const READER = 'reader-key-0123456789abcdef'

/** The keys-file line for a secret, made the way docs/server.md says: `printf %s secret | sha256sum`. */
async function hashedLine(secret: string, scopes: string): Promise<string> {
  const { stdout } = await run('bash', ['-c', 'printf %s "$SECRET" | sha256sum'], { env: { ...process.env, SECRET: secret } })
  return `sha256:${stdout.split(' ')[0] ?? ''}:${scopes}`
}

function keysFile(lines: readonly string[]): string {
  const path = join(tempRunsDir(), 'keys')
  writeFileSync(path, lines.join('\n'))
  return path
}

/** Opens an EventSource and collects its events until run_end, or until it fails; answers the seqs and the failure status. */
function watch(url: string): Promise<{ seqs: number[]; failed: number | undefined }> {
  return new Promise((resolve) => {
    const source = new EventSource(url)
    const seqs: number[] = []
    for (const type of JOURNAL_LINE_TYPES) {
      source.addEventListener(type, (event) => {
        // A journal `error` line and EventSource's own `error` event share a name; only the line has data.
        if (typeof event.data !== 'string') return
        seqs.push(Number(event.lastEventId))
        if (type === 'run_end') {
          source.close()
          resolve({ seqs, failed: undefined })
        }
      })
    }
    source.onerror = (event) => {
      source.close()
      resolve({ seqs, failed: event.code })
    }
  })
}

describe('API keys from a file, as hashes', () => {
  it('accepts the secret whose SHA-256 the file holds, with the scopes it lists, next to plain keys from the env', async () => {
    const file = keysFile(['# readers', await hashedLine(SECRET, 'runs:read'), ''])
    const server = await startServer({ runtime: testRuntime(), port: 0, env: { LOCUS_API_KEYS_FILE: file, LOCUS_API_KEYS: READER }, onError: () => undefined })
    onCleanup(() => server.close())
    const get = (key: string, path = '/v1/runs', init: RequestInit = {}) =>
      fetch(`${server.url}${path}`, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) } })
    expect((await get(SECRET)).status).toBe(200)
    expect((await get(READER)).status).toBe(200)
    expect((await get(`${SECRET}x`)).status).toBe(401)
    const start = await get(SECRET, '/v1/workflows/echo/runs', { method: 'POST', body: '{"input":{"ticket":"T-1"}}' })
    expect(start.status).toBe(403)
    expect(((await start.json()) as { error: { message: string } }).error.message).toMatch(/lacks the scope runs:start; it has runs:read/)
  })

  it('refuses a file holding a plain secret or a malformed hash, by line number and never echoing it', async () => {
    const plain = keysFile(['# keys', SECRET])
    let error: unknown
    try {
      await startServer({ runtime: testRuntime(), port: 0, env: {}, apiKeysFile: plain })
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(ServerOptionsError)
    expect((error as Error).message).toMatch(/line 2: the keys file holds hashes, not secrets/)
    expect((error as Error).message).not.toContain(SECRET)
    await expect(startServer({ runtime: testRuntime(), port: 0, env: {}, apiKeysFile: keysFile(['sha256:abc:runs:read']) })).rejects.toThrow(/line 1: a hashed key is "sha256:" and the 64 hex digits/)
    await expect(startServer({ runtime: testRuntime(), port: 0, env: {}, apiKeysFile: keysFile([await hashedLine(SECRET, 'runs:write')]) })).rejects.toThrow(/line 1: unknown scope "runs:write"/)
    await expect(startServer({ runtime: testRuntime(), port: 0, env: {}, apiKeysFile: join(tempRunsDir(), 'missing') })).rejects.toThrow(/Cannot read the API keys file/)
  })
})

describe('events tokens', () => {
  it('let an EventSource read its own run, and only that run, until the token expires', async () => {
    let now = Date.parse('2026-12-03T10:00:00.000Z')
    const server = await testServer({ apiKeys: [READER], now: () => now, eventsTokenTtlMs: 60_000 })
    const start = async (): Promise<string> => {
      const started = await server.json<{ runId: string }>('/v1/workflows/chatty/runs', { method: 'POST', body: JSON.stringify({ input: { lines: 30, pauseMs: 1 } }), key: READER })
      return started.body.runId
    }
    const first = await start()
    const second = await start()
    expect((await server.json(`/v1/runs/${first}/events-token`, { method: 'POST' })).status).toBe(401)
    const issued = await server.json<{ token: string; expiresAt: string; events: string }>(`/v1/runs/${first}/events-token`, { method: 'POST', key: READER })
    expect(issued).toMatchObject({ status: 200, body: { expiresAt: '2026-12-03T10:01:00.000Z' } })
    const token = encodeURIComponent(issued.body.token)

    const own = await watch(`${server.url}${issued.body.events}`)
    expect(own.failed).toBeUndefined()
    const journal: number[] = []
    for await (const line of server.runtime.store.readLines({ runId: first, executionId: first })) journal.push(line.seq)
    expect(journal.length).toBeGreaterThan(30)
    expect(own.seqs).toEqual(journal)

    expect(await watch(`${server.url}/v1/runs/${second}/events?token=${token}`)).toEqual({ seqs: [], failed: 401 })
    expect(await watch(`${server.url}/v1/runs/${first}/events?token=v1.1.nope`)).toEqual({ seqs: [], failed: 401 })
    expect(await watch(`${server.url}/v1/runs/${first}/events`)).toEqual({ seqs: [], failed: 401 })
    now += 59_999
    expect((await watch(`${server.url}/v1/runs/${first}/events?token=${token}`)).failed).toBeUndefined()
    now += 1
    const expired = await server.json<{ error: { code: string; message: string } }>(`/v1/runs/${first}/events?token=${token}`)
    expect(expired).toMatchObject({ status: 401, body: { error: { code: 'unauthorized', message: expect.stringContaining('expired at 2026-12-03T10:01:00.000Z') } } })
    expect(await watch(`${server.url}/v1/runs/${first}/events?token=${token}`)).toEqual({ seqs: [], failed: 401 })
    const unknownRun = await server.json(`/v1/runs/no-such-run/events-token`, { method: 'POST', key: READER })
    expect(unknownRun.status).toBe(404)
  })
})
