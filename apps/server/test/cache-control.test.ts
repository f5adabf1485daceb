// Nothing the server answers may be kept by a cache between it and the
// client: every response says `Cache-Control: no-store` and carries the
// request id, whether a route made it through Hono's context (JSON, HTML,
// text), built the Response itself (the inspector's error page), or failed.
import { describe, expect, it } from 'vitest'
import { testServer } from './helpers.js'

interface Accepted {
  readonly runId: string
}

describe('every response is marked no-store and carries its request id', () => {
  it('JSON routes, errors, the OpenAPI document, inspector pages and their error page', async () => {
    const server = await testServer()
    const started = await server.json<Accepted>('/v1/workflows/echo/runs', { method: 'POST', body: JSON.stringify({ input: { ticket: 'T-1' } }) })
    expect(started.status).toBe(202)
    await server.json(`/v1/runs/${started.body.runId}/result?wait=30`)
    const paths = [
      `/v1/runs/${started.body.runId}`,
      `/v1/runs/${started.body.runId}/journal`,
      '/v1/runs/no-such-run',
      '/v1/workflows',
      '/openapi.json',
      '/healthz',
      `/runs/${started.body.runId}`,
      '/runs/no-such-run',
      '/inspector.js',
    ]
    const seen: Record<string, { status: number; cacheControl: string | null; requestId: boolean }> = {}
    for (const path of paths) {
      const response = await server.request(path)
      await response.arrayBuffer()
      seen[path] = { status: response.status, cacheControl: response.headers.get('cache-control'), requestId: (response.headers.get('x-request-id') ?? '').length > 0 }
    }
    // The 404s are real answers of both kinds: a JSON error and the inspector's own page.
    expect(seen['/v1/runs/no-such-run']?.status).toBe(404)
    expect(seen['/runs/no-such-run']?.status).toBe(404)
    for (const [path, answer] of Object.entries(seen)) {
      expect({ path, cacheControl: answer.cacheControl, requestId: answer.requestId }).toEqual({ path, cacheControl: 'no-store', requestId: true })
    }
  })
})
