// Pre-signed callback URLs over real HTTP on the file store: each listed deferral carries a callbackUrl
// that settles it without an API key (decidedBy/via 'callback'); a bad signature is 403, an expired URL
// 410, a used one answers as a repeated answer, and none of these writes anything; the URL is derived
// from the secret, so it is the same, and still works, after a restart.
import type { JournalLine } from '@locus/journal'
import { type Runtime, createRuntime, defineTool, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ServerOptionsError } from '../src/index.js'
import { type TestServer, tempRunsDir, testServer } from './helpers.js'

const SECRET = 'callback-secret-0123456789abcdef'
const KEY = 'reader-key-0123456789abcdef'
const Decision = z.object({ approved: z.boolean() })

const approvals = defineWorkflow({
  name: 'two-approvals',
  tools: {
    // No deadline: its URL is good for callbackTtlSeconds from when it opened.
    approve: defineTool({ deferred: true, input: z.object({ who: z.string() }), output: Decision }),
    // A deadline an hour away: its URL is good until then.
    sign: defineTool({ deferred: true, input: z.object({ who: z.string() }), output: Decision, retry: { timeout_secs: 3600, max_retries: 1, backoff_base_secs: 0, backoff_max_secs: 0 } }),
  },
  async run({ tool }) {
    const [approved, signed] = await Promise.all([
      tool('approve', { who: 'legal' }),
      tool('sign', { who: 'ops' }).catch((error: unknown) => ({ rejected: error instanceof Error ? error.message : String(error) })),
    ])
    return { ok: true, approved, signed }
  },
})

interface Listed {
  deferredId: string
  tool: string
  expiresAt: string | null
  openedAt?: string
  callbackUrl?: string
}

async function listed(server: TestServer, runId: string, count: number): Promise<Listed[]> {
  let deferred: Listed[] = []
  for (let tries = 0; tries < 500 && deferred.length < count; tries += 1) {
    deferred = (await server.json<{ deferred: Listed[] }>(`/v1/runs/${runId}/deferred`, { key: KEY })).body.deferred
    if (deferred.length < count) await new Promise((resolve) => setTimeout(resolve, 10))
  }
  expect(deferred).toHaveLength(count)
  return deferred
}

async function journal(runtime: Runtime, runId: string): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  for (const info of await runtime.store.listExecutions(runId)) for await (const line of runtime.store.readLines(info)) lines.push(line)
  return lines
}

const settledLines = async (runtime: Runtime, runId: string) => (await journal(runtime, runId)).filter((line) => line.type === 'deferred_settled')

/** POST to a callback URL with no API key: a path on `server`, the rest as a client would send it. */
function post(server: TestServer, url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: { error?: { code: string; message: string; issues?: string[] }; status?: string } }> {
  const { pathname, search } = new URL(url)
  return server.json(`${pathname}${search}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } })
}

describe('callback URLs of deferrals', () => {
  it('settle a deferral without an API key, refuse a tampered, expired or misdirected one, and answer a used one as a repeated answer, writing nothing', async () => {
    let now = Date.now()
    const runtime = createRuntime({ workflows: [approvals], runsDir: tempRunsDir() })
    const server = await testServer({ runtime, apiKeys: [KEY], callbackSecret: SECRET, callbackTtlSeconds: 3600, now: () => now })
    const runId = (await server.json<{ runId: string }>('/v1/workflows/two-approvals/runs', { method: 'POST', body: JSON.stringify({ input: null }), key: KEY })).body.runId
    const deferred = await listed(server, runId, 2)
    const approve = deferred.find((open) => open.tool === 'approve')!
    const sign = deferred.find((open) => open.tool === 'sign')!

    // Absolute URLs on the origin the request came to, naming the run, the deferral and the expiry.
    for (const open of deferred) {
      const url = new URL(open.callbackUrl ?? '')
      expect(url.origin).toBe(server.url)
      expect(url.pathname).toBe(`/v1/callbacks/deferred/${runId}/${open.deferredId}`)
      expect(url.searchParams.get('signature')).toMatch(/^[A-Za-z0-9_-]{43}$/)
    }
    // No deadline: an hour (callbackTtlSeconds) after it opened; a deadline: the deadline itself.
    expect(Number(new URL(approve.callbackUrl!).searchParams.get('expires'))).toBe(Date.parse(approve.openedAt!) + 3_600_000)
    expect(Number(new URL(sign.callbackUrl!).searchParams.get('expires'))).toBe(Date.parse(sign.expiresAt!))
    // The run's own JSON shows the same URLs.
    const run = await server.json<{ deferred: Listed[] }>(`/v1/runs/${runId}`, { key: KEY })
    expect(run.body.deferred.map((open) => open.callbackUrl).sort()).toEqual(deferred.map((open) => open.callbackUrl).sort())

    // A tampered signature, deferral or expiry: 403, nothing written, the deferral still open.
    const good = new URL(approve.callbackUrl!)
    const tampered = [
      good.href.replace(/signature=([A-Za-z0-9_-])/, (_match, first: string) => `signature=${first === 'A' ? 'B' : 'A'}`),
      good.href.replace(approve.deferredId, sign.deferredId),
      good.href.replace(/expires=(\d+)/, (_match, ms: string) => `expires=${String(Number(ms) + 86_400_000)}`),
      `${good.origin}${good.pathname}`,
    ]
    for (const url of tampered) {
      const refused = await post(server, url, { result: { approved: true } })
      expect(refused.status, url).toBe(403)
      expect(refused.body.error?.code).toBe('forbidden')
      expect(JSON.stringify(refused.body)).not.toContain(SECRET)
    }
    // The request checks of every route: a body that is not JSON, a foreign Origin.
    expect((await server.request(`${good.pathname}${good.search}`, { method: 'POST', body: 'approved', headers: { 'content-type': 'text/plain' } })).status).toBe(415)
    expect((await post(server, good.href, { result: { approved: true } }, { origin: 'https://evil.example' })).status).toBe(403)
    // A result that does not fit the tool's output schema: 400 with the issues, still open.
    const invalid = await post(server, good.href, { result: { approved: 'yes' } })
    expect(invalid.status).toBe(400)
    expect(invalid.body.error?.issues?.join(' ')).toContain('approved')
    expect((await post(server, good.href, { result: { approved: true }, error: 'both' })).status).toBe(400)
    // Expired on the server's clock: 410, nothing written.
    now = Date.parse(approve.openedAt!) + 3_600_000
    const expired = await post(server, good.href, { result: { approved: true } })
    expect(expired.status).toBe(410)
    expect(expired.body.error?.code).toBe('callback_expired')
    now = Date.now()
    expect(await settledLines(runtime, runId)).toEqual([])
    expect(await listed(server, runId, 2)).toHaveLength(2)

    // A good URL settles its deferral, with no API key: decidedBy and via 'callback'.
    const settled = await post(server, good.href, { result: { approved: true } })
    expect(settled).toMatchObject({ status: 200, body: { status: 'accepted' } })
    const rejected = await post(server, sign.callbackUrl!, { error: 'not this quarter' })
    expect(rejected.status).toBe(200)

    // Used: the same decision again answers as a repeated answer does; another is the resolve route's 409. Nothing more is written.
    const again = await post(server, good.href, { result: { approved: true } })
    expect(again).toMatchObject({ status: 200, body: { status: 'already-answered' } })
    const other = await post(server, good.href, { result: { approved: false } })
    expect(other.status).toBe(409)
    expect(other.body.error?.code).toBe('already_resolved')
    const byKey = await server.json(`/v1/runs/${runId}/deferred/${approve.deferredId}/resolve`, { method: 'POST', body: JSON.stringify({ result: { approved: false } }), key: KEY })
    expect({ status: byKey.status, body: byKey.body }).toEqual({ status: other.status, body: { error: { ...other.body.error, requestId: (byKey.body as { error: { requestId: string } }).error.requestId } } })

    const result = await server.json<{ result: unknown }>(`/v1/runs/${runId}/result?wait=10`, { key: KEY })
    expect(result.body.result).toEqual({ ok: true, approved: { approved: true }, signed: { rejected: expect.stringContaining('not this quarter') as unknown } })
    const lines = await settledLines(runtime, runId)
    expect(lines).toHaveLength(2)
    expect(lines.find((line) => line.deferredId === approve.deferredId)).toMatchObject({ outcome: 'resolved', result: { approved: true }, decidedBy: 'callback', via: 'callback' })
    expect(lines.find((line) => line.deferredId === sign.deferredId)).toMatchObject({ outcome: 'rejected', decidedBy: 'callback', via: 'callback' })
    // After the run ended the URL still answers as a repeated answer.
    expect(await post(server, good.href, { result: { approved: true } })).toMatchObject({ status: 200, body: { status: 'already-answered' } })
    expect(await settledLines(runtime, runId)).toHaveLength(2)
  })

  it('is the same URL, and still settles the deferral, after the server restarts with the same secret (LOCUS_CALLBACK_SECRET)', async () => {
    const runsDir = tempRunsDir()
    const first = await testServer({ runtime: createRuntime({ workflows: [approvals], runsDir }), apiKeys: [KEY], callbackSecret: SECRET })
    const runId = (await first.json<{ runId: string }>('/v1/workflows/two-approvals/runs', { method: 'POST', body: JSON.stringify({ input: null }), key: KEY })).body.runId
    const before = await listed(first, runId, 2)
    await first.close()

    // The next server on the same port and runs directory, with the secret from the environment: the run resumes, waiting on the same deferrals.
    const runtime = createRuntime({ workflows: [approvals], runsDir })
    const second = await testServer({ runtime, apiKeys: [KEY], port: first.port, env: { LOCUS_CALLBACK_SECRET: SECRET } })
    const after = await listed(second, runId, 2)
    expect(after.map((open) => [open.deferredId, open.callbackUrl]).sort()).toEqual(before.map((open) => [open.deferredId, open.callbackUrl]).sort())
    for (const open of before) {
      const answered = await post(second, open.callbackUrl!, { result: { approved: open.tool === 'approve' } })
      expect(answered.status).toBe(200)
    }
    const result = await second.json<{ result: unknown }>(`/v1/runs/${runId}/result?wait=10`, { key: KEY })
    expect(result.body.result).toEqual({ ok: true, approved: { approved: true }, signed: { approved: false } })
    const lines = await settledLines(runtime, runId)
    expect(lines.map((line) => [line.decidedBy, line.via])).toEqual([
      ['callback', 'callback'],
      ['callback', 'callback'],
    ])
  })

  it('lists no callbackUrl and answers 404 on a server without a secret; refuses a short secret or a bad TTL at start', async () => {
    const runtime = createRuntime({ workflows: [approvals], runsDir: tempRunsDir() })
    const server = await testServer({ runtime, apiKeys: [KEY] })
    const runId = (await server.json<{ runId: string }>('/v1/workflows/two-approvals/runs', { method: 'POST', body: JSON.stringify({ input: null }), key: KEY })).body.runId
    const deferred = await listed(server, runId, 2)
    expect(deferred.every((open) => open.callbackUrl === undefined)).toBe(true)
    const withSecret = await testServer({ runtime: createRuntime({ workflows: [approvals], runsDir: tempRunsDir() }), callbackSecret: SECRET })
    const { pathname, search } = new URL(`${withSecret.url}/v1/callbacks/deferred/${runId}/${deferred[0]!.deferredId}?expires=1&signature=${'A'.repeat(43)}`)
    expect((await server.json(`${pathname}${search}`, { method: 'POST', body: JSON.stringify({ result: { approved: true } }) })).status).toBe(404)
    expect(await settledLines(runtime, runId)).toEqual([])
    await expect(testServer({ runtime, callbackSecret: 'short' })).rejects.toThrow(ServerOptionsError)
    await expect(testServer({ runtime, callbackSecret: SECRET, callbackTtlSeconds: 0 })).rejects.toThrow(/callbackTtlSeconds/)
  })
})
