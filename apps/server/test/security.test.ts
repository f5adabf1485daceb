// The checks every request passes with or without API keys: Host, Origin,
// declared content types, CORS only for --allow-origin, request ids, and
// authentication before the body is read. Real servers on loopback, requests
// over node:http where fetch would not send the header under test (Host).
import { request as httpRequest } from 'node:http'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { REQUEST_ID_HEADER, type RequestLogEntry, allowedHostsFor, createServer, declaredContentTypes, parseAllowedHosts, parseAllowedOrigins, startServer } from '../src/index.js'
import { onCleanup, testRuntime, testServer } from './helpers.js'

const KEY = 'security-test-key-0123456789'
const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } } })

interface RawAnswer {
  readonly status: number
  readonly headers: Record<string, string | string[] | undefined>
  readonly body: string
}

/** One request over node:http, which sends the Host header it is given. */
function raw(url: string, options: { method?: string; path: string; headers?: Record<string, string>; body?: string }): Promise<RawAnswer> {
  const target = new URL(url)
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      { host: target.hostname, port: target.port, method: options.method ?? 'GET', path: options.path, headers: options.headers ?? {} },
      (incoming) => {
        let body = ''
        incoming.setEncoding('utf8')
        incoming.on('data', (chunk: string) => (body += chunk))
        incoming.on('end', () => {
          resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, body })
        })
      },
    )
    outgoing.on('error', reject)
    outgoing.end(options.body)
  })
}

async function runCount(server: Awaited<ReturnType<typeof testServer>>): Promise<number> {
  return (await server.runtime.list()).rows.length
}

describe('Host: only the names the server is bound to', () => {
  for (const keys of [undefined, [KEY]] as const) {
    it(`answers 403 to Host: evil.example.com on /v1/runs and /mcp ${keys === undefined ? 'without keys' : 'with keys'}, and nothing starts`, async () => {
      const server = await testServer(keys === undefined ? {} : { apiKeys: [...keys] })
      const auth: Record<string, string> = keys === undefined ? {} : { authorization: `Bearer ${KEY}` }
      const evil = { host: `evil.example.com:${server.port}`, ...auth }
      const list = await raw(server.url, { path: '/v1/runs', headers: evil })
      expect(list.status).toBe(403)
      expect(JSON.parse(list.body)).toMatchObject({ error: { code: 'host_not_allowed' } })
      const start = await raw(server.url, { method: 'POST', path: '/v1/workflows/echo/runs', headers: { ...evil, 'content-type': 'application/json' }, body: '{"input":{"ticket":"T-1"}}' })
      expect(start.status).toBe(403)
      const mcp = await raw(server.url, { method: 'POST', path: '/mcp', headers: { ...evil, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: INITIALIZE })
      expect(mcp.status).toBe(403)
      expect(await runCount(server)).toBe(0)
      // The loopback names all answer.
      for (const name of ['127.0.0.1', 'localhost', '[::1]']) {
        expect((await raw(server.url, { path: '/v1/runs', headers: { host: `${name}:${server.port}`, ...auth } })).status, name).toBe(200)
      }
    })
  }

  it('answers names added with allowedHosts, and the bound address', async () => {
    const server = await testServer({ allowedHosts: ['locus.internal'] })
    expect((await raw(server.url, { path: '/v1/runs', headers: { host: 'locus.internal' } })).status).toBe(200)
    expect((await raw(server.url, { path: '/v1/runs', headers: { host: 'LOCUS.internal:8080' } })).status).toBe(200)
    expect((await raw(server.url, { path: '/v1/runs', headers: { host: 'other.internal' } })).status).toBe(403)
  })

  it('derives the allowed names from the bind address and refuses names that are not host names', () => {
    expect(allowedHostsFor('127.0.0.1')).toEqual(['127.0.0.1', 'localhost', '[::1]'])
    expect(allowedHostsFor('10.1.2.3', ['Locus.Example.com'])).toEqual(['127.0.0.1', 'localhost', '[::1]', '10.1.2.3', 'locus.example.com'])
    expect(allowedHostsFor('::1')).toContain('[::1]')
    expect(allowedHostsFor('0.0.0.0')).toContain('127.0.0.1')
    for (const bad of ['http://locus.example.com', 'locus.example.com/path', 'a b', '']) {
      expect(() => parseAllowedHosts([bad]), bad).toThrow(/not a host name or address/)
    }
  })
})

describe('Origin: the server’s own, or one of allowedOrigins', () => {
  it('answers 403 to another origin, also to Origin: null, with and without keys, and the run never starts', async () => {
    for (const apiKeys of [undefined, [KEY]]) {
      const server = await testServer(apiKeys === undefined ? {} : { apiKeys })
      const key = apiKeys === undefined ? undefined : KEY
      for (const origin of ['http://127.0.0.1:8999', 'http://evil.example.com', 'null']) {
        const response = await server.json('/v1/workflows/echo/runs', { method: 'POST', body: '{"input":{"ticket":"T-1"}}', headers: { origin }, ...(key === undefined ? {} : { key }) })
        expect(response.status, origin).toBe(403)
        expect(response.body).toMatchObject({ error: { code: 'forbidden', message: expect.stringContaining(`the origin ${JSON.stringify(origin)}`) } })
        expect(response.headers.get('access-control-allow-origin')).toBeNull()
      }
      expect(await runCount(server)).toBe(0)
      // The server's own origin passes (the inspector's pages post from it).
      const own = await server.json('/v1/workflows/echo/runs', { method: 'POST', body: '{"input":{"ticket":"T-1"}}', headers: { origin: server.url }, ...(key === undefined ? {} : { key }) })
      expect(own.status).toBe(202)
      expect(own.headers.get('access-control-allow-origin')).toBeNull()
    }
  })

  it('CORS is off by default: a preflight from another origin answers 403 and allows nothing', async () => {
    const server = await testServer()
    const preflight = await server.request('/v1/workflows/echo/runs', {
      method: 'OPTIONS',
      headers: { origin: 'http://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    })
    expect(preflight.status).toBe(403)
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull()
  })

  it('answers preflights and requests of exactly the allowed origins', async () => {
    const server = await testServer({ allowedOrigins: ['http://app.example.com'] })
    const preflight = await server.request('/v1/workflows/echo/runs', {
      method: 'OPTIONS',
      headers: { origin: 'http://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, authorization' },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe('http://app.example.com')
    expect(preflight.headers.get('access-control-allow-headers')).toContain('content-type')
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST')
    const start = await server.json('/v1/workflows/echo/runs', { method: 'POST', body: '{"input":{"ticket":"T-1"}}', headers: { origin: 'http://app.example.com' } })
    expect(start.status).toBe(202)
    expect(start.headers.get('access-control-allow-origin')).toBe('http://app.example.com')
    expect(start.headers.get('access-control-expose-headers')).toContain(REQUEST_ID_HEADER)
    const other = await server.request('/v1/runs', { method: 'OPTIONS', headers: { origin: 'http://app.example.com.evil.net', 'access-control-request-method': 'GET' } })
    expect(other.status).toBe(403)
  })

  it('refuses allowed origins that are not origins, naming them', async () => {
    for (const bad of ['app.example.com', 'http://app.example.com/path', 'ftp://app.example.com', '*']) {
      expect(() => parseAllowedOrigins([bad]), bad).toThrow(/is not an origin/)
      await expect(startServer({ runtime: testRuntime(), port: 0, env: {}, allowedOrigins: [bad] }), bad).rejects.toThrow(bad)
    }
    expect(parseAllowedOrigins(['https://app.example.com/', 'http://localhost:5173'])).toEqual(['https://app.example.com', 'http://localhost:5173'])
  })
})

describe('content types: each state-changing route takes only its declared ones', () => {
  it('declares JSON for the API and /mcp, and forms for the inspector’s posts', () => {
    expect(declaredContentTypes('/v1/workflows/echo/runs')).toEqual(['application/json'])
    expect(declaredContentTypes('/v1/runs/r/deferred/tool-1-a1/resolve')).toEqual(['application/json'])
    expect(declaredContentTypes('/mcp')).toEqual(['application/json'])
    expect(declaredContentTypes('/runs/r/deferred/tool-1-a1/resolve')).toContain('application/x-www-form-urlencoded')
    expect(declaredContentTypes('/login')).toContain('application/x-www-form-urlencoded')
  })

  it('answers 415 to any other content type on start, cancel, resolve and /mcp, and nothing changes (property)', async () => {
    const server = await testServer()
    const waiting = await server.json<{ runId: string }>('/v1/workflows/waits/runs', { method: 'POST', body: '{}' })
    expect(waiting.status).toBe(202)
    const runId = waiting.body.runId
    const before = await server.json(`/v1/runs/${runId}`)
    const mediaType = fc
      .tuple(fc.constantFrom('text', 'application', 'multipart', 'image'), fc.stringMatching(/^[a-z][a-z0-9.+-]{0,15}$/))
      .map(([type, subtype]) => `${type}/${subtype}`)
      .filter((type) => type !== 'application/json')
    await fc.assert(
      fc.asyncProperty(mediaType, fc.constantFrom('', '; charset=utf-8'), fc.constantFrom('/v1/workflows/echo/runs', `/v1/runs/${runId}/cancel`, `/v1/runs/${runId}/deferred/tool-1-a1/resolve`, '/mcp'), async (type, parameters, path) => {
        const response = await server.json(path, { method: 'POST', body: '{"input":{"ticket":"T-1"},"result":{"approved":true}}', headers: { 'content-type': `${type}${parameters}` } })
        expect(response.status).toBe(415)
        expect(response.body).toMatchObject({ error: { code: 'unsupported_media_type', message: expect.stringContaining('application/json') } })
      }),
      { numRuns: 60 },
    )
    // A body with no content type at all is refused too; a bodiless POST (cancel) is not.
    const untyped = await raw(server.url, { method: 'POST', path: '/v1/workflows/echo/runs', body: '{"input":{"ticket":"T-1"}}' })
    expect(untyped.status).toBe(415)
    expect(await runCount(server)).toBe(1)
    expect((await server.json(`/v1/runs/${runId}`)).body).toEqual(before.body)
    const cancel = await raw(server.url, { method: 'POST', path: `/v1/runs/${runId}/cancel` })
    expect(cancel.status).toBe(202)
    expect((await server.json(`/v1/workflows/echo/runs`, { method: 'POST', body: '{"input":{"ticket":"T-1"}}', headers: { 'content-type': 'application/json; charset=utf-8' } })).status).toBe(202)
  })

  it('answers 415 to JSON on the inspector’s form posts', async () => {
    const server = await testServer()
    const response = await server.request('/runs/x/deferred/tool-1-a1/resolve', { method: 'POST', body: '{"result":"{}"}', headers: { 'content-type': 'application/json' } })
    expect(response.status).toBe(415)
  })
})

describe('request ids', () => {
  it('every response carries x-request-id; an error body carries the same id, and onResponse and onError are told it', async () => {
    const entries: RequestLogEntry[] = []
    const faults: { error: unknown; requestId: string | undefined }[] = []
    const server = await testServer({
      onResponse: (entry) => entries.push(entry),
      onError: (error, context) => faults.push({ error, requestId: context?.requestId }),
    })
    const ok = await server.json('/v1/runs')
    const okId = ok.headers.get(REQUEST_ID_HEADER)
    expect(okId).toMatch(/^req_[0-9a-f]{16}$/)
    const missing = await server.json<{ error: { requestId: string; message: string } }>('/v1/runs/no-such-run')
    expect(missing.status).toBe(404)
    expect(missing.body.error.requestId).toBe(missing.headers.get(REQUEST_ID_HEADER))
    expect(missing.body.error.message).toBe('No run "no-such-run".')
    expect(missing.body.error.requestId).not.toBe(okId)
    const logged = entries.find((entry) => entry.requestId === missing.body.error.requestId)
    // The log keeps the whole message (with the runs directory); the client got the run id only.
    expect(logged).toMatchObject({ method: 'GET', path: '/v1/runs/no-such-run', status: 404, error: { code: 'not_found', detail: expect.stringContaining('no-such-run') } })
    expect(entries.find((entry) => entry.requestId === okId)).toMatchObject({ status: 200, path: '/v1/runs' })

    // A fault of the server: the client gets internal_error and the id; onError gets the error under the same id.
    const broken = createServer({
      runtime: { ...testRuntime(), list: () => Promise.reject(new Error('disk on fire at /var/lib/locus/runs')) },
      onError: (error, context) => faults.push({ error, requestId: context?.requestId }),
    })
    const failed = await broken.request('/v1/runs')
    const body = (await failed.json()) as { error: { code: string; message: string; requestId: string } }
    expect(failed.status).toBe(500)
    expect(body.error.code).toBe('internal_error')
    expect(body.error.message).not.toContain('/var/lib')
    expect(faults.at(-1)?.requestId).toBe(body.error.requestId)
    expect(String(faults.at(-1)?.error)).toContain('disk on fire')
  })
})

describe('authentication comes before the body', () => {
  it('answers 401 to a request without a key while its body is still being sent, having read none of it', async () => {
    const server = await testServer({ apiKeys: [KEY] })
    const target = new URL(server.url)
    const answer = await new Promise<{ status: number; sentBytes: number }>((resolve, reject) => {
      let sentBytes = 0
      const outgoing = httpRequest(
        { host: target.hostname, port: target.port, method: 'POST', path: '/v1/workflows/echo/runs', headers: { 'content-type': 'application/json', 'content-length': String(10 * 1024 * 1024) } },
        (incoming) => {
          incoming.resume()
          resolve({ status: incoming.statusCode ?? 0, sentBytes })
          outgoing.destroy()
        },
      )
      outgoing.on('error', (error) => {
        if ((error as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(error)
      })
      // 64 KiB of a 10 MB body, then nothing more: a server that reads the body before checking the key never answers.
      const chunk = Buffer.alloc(64 * 1024, 0x20)
      outgoing.write(chunk)
      sentBytes += chunk.length
    })
    expect(answer.status).toBe(401)
    expect(answer.sentBytes).toBeLessThan(10 * 1024 * 1024)
  })

  it('still answers 413 to an authenticated body over the limit', async () => {
    const server = await testServer({ apiKeys: [KEY], bodyLimitBytes: 1024 })
    const response = await server.json('/v1/workflows/echo/runs', { method: 'POST', key: KEY, body: JSON.stringify({ input: { ticket: 'x'.repeat(4096) } }) })
    expect(response.status).toBe(413)
    expect(response.body).toMatchObject({ error: { code: 'payload_too_large' } })
    onCleanup(() => undefined)
  })
})
