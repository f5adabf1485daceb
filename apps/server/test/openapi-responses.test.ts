// Every route's answers held to /openapi.json: each response's status must be
// one the document declares for that operation, and its JSON body (each line
// of the journal's NDJSON) must validate against the declared schema. The
// validator is built from the document itself (its component schemas through
// z.fromJSONSchema), not from the server's zod schemas.
import { createRuntime, createScriptedHost, defineDeferredTool, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { WORKFLOWS, tempRunsDir, testServer } from './helpers.js'
import { until } from './inspector-fixtures.js'

interface Operation {
  readonly operationId?: string
  readonly responses: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }>
}
type Document = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> }; servers?: unknown[] }

function validatorOf(document: Document): (method: string, path: string, status: number, contentType: string, text: string) => string[] {
  const defs = JSON.parse(JSON.stringify(document.components.schemas).replaceAll('#/components/schemas/', '#/$defs/')) as Record<string, unknown>
  const compiled = new Map<string, z.ZodType>()
  const schemaOf = (schema: Record<string, unknown>): z.ZodType => {
    const key = JSON.stringify(schema)
    let found = compiled.get(key)
    if (found === undefined) {
      const rooted = JSON.parse(key.replaceAll('#/components/schemas/', '#/$defs/')) as Record<string, unknown>
      found = z.fromJSONSchema({ ...rooted, $defs: defs } as Parameters<typeof z.fromJSONSchema>[0])
      compiled.set(key, found)
    }
    return found
  }
  const templates = Object.keys(document.paths).map((template) => ({ template, pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+').replaceAll('.', '\\.')}$`) }))
  return (method, path, status, contentType, text) => {
    const template = templates.find((candidate) => candidate.pattern.test(path))?.template
    const operation = template === undefined ? undefined : document.paths[template]?.[method.toLowerCase()]
    if (operation === undefined) return [`${method} ${path}: no operation in the document`]
    const response = operation.responses[String(status)]
    if (response === undefined) return [`${method} ${path} answered ${status}, which ${template ?? ''} does not declare (${Object.keys(operation.responses).join(', ')})`]
    const mediaType = contentType.split(';')[0]?.trim() ?? ''
    const schema = response.content?.[mediaType]?.schema
    if (schema === undefined || (mediaType !== 'application/json' && mediaType !== 'application/x-ndjson')) return []
    const values = mediaType === 'application/json' ? [JSON.parse(text) as unknown] : text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as unknown)
    return values.flatMap((value) => {
      const parsed = schemaOf(schema).safeParse(value)
      return parsed.success ? [] : [`${method} ${path} ${status}: the body does not fit the document: ${parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}`]
    })
  }
}

const KEY = 'openapi-full-key-0123456789'
const READER = 'openapi-reader-key-0123456789'

const approval = defineWorkflow({
  name: 'approval',
  tools: { approve: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },
  run: async ({ tool }) => ({ ok: true, approval: await tool('approve', { amount: 42 }) }),
})

describe('/openapi.json agrees with the server', () => {
  it('names every operation, a server and the request checks’ answers', async () => {
    const server = await testServer()
    const document = (await server.json<Document>('/openapi.json')).body
    expect(document.servers).toEqual([expect.objectContaining({ url: '/' })])
    const ids = Object.values(document.paths).flatMap((operations) => Object.values(operations).map((operation) => operation.operationId))
    expect(ids.every((id) => typeof id === 'string')).toBe(true)
    expect(new Set(ids).size).toBe(ids.length)
    expect(Object.keys(document.paths['/mcp'] ?? {}).sort()).toEqual(['delete', 'get', 'post'])
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        expect(operation.responses['403'], `${method} ${path}`).toBeDefined()
        if (method === 'post') expect(operation.responses['415'], `${method} ${path}`).toBeDefined()
      }
    }
  })

  it('every answer of every route, over runs that complete, wait, fail and are cancelled, is declared and fits its schema', async () => {
    const runtime = createRuntime({
      workflows: [...WORKFLOWS, approval],
      host: createScriptedHost({ rules: [{ match: { prompt: 'hang' }, steps: [{ hang: true }] }, { steps: [{ text: 'fine' }] }] }),
      runsDir: tempRunsDir(),
    })
    const server = await testServer({ runtime, apiKeys: [KEY, `${READER}:runs:read`], bodyLimitBytes: 4096 })
    const document = (await server.json<Document>('/openapi.json')).body
    const validate = validatorOf(document)
    // The validator does refuse: an undeclared status, a body outside its schema, a journal line that is not one.
    expect(validate('GET', '/v1/runs/x/deferred', 418, 'application/json', '{}')).toHaveLength(1)
    expect(validate('GET', '/v1/runs/x', 200, 'application/json', '{"runId":1}')).toHaveLength(1)
    expect(validate('GET', '/v1/runs/x/journal', 200, 'application/x-ndjson', '{"type":"nonsense"}\n')).toHaveLength(1)
    expect(validate('GET', '/v1/runs/x/deferred', 400, 'application/json', '{"error":{"code":"invalid_request","message":"m","requestId":"req_1"}}')).toEqual([])
    const problems: string[] = []
    const seen: string[] = []
    async function call(method: string, path: string, init: { key?: string | undefined; body?: string; headers?: Record<string, string> } = { key: KEY }): Promise<{ status: number; text: string }> {
      const headers: Record<string, string> = { ...(init.headers ?? {}) }
      if (init.key !== undefined) headers.authorization = `Bearer ${init.key}`
      if (init.body !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'application/json'
      const response = await fetch(`${server.url}${path}`, { method, headers, ...(init.body === undefined ? {} : { body: init.body }) })
      const text = response.status === 204 ? '' : await response.text()
      problems.push(...validate(method, path.split('?')[0] ?? path, response.status, response.headers.get('content-type') ?? '', text))
      seen.push(`${method} ${path.split('?')[0] ?? ''} ${response.status}`)
      return { status: response.status, text }
    }
    const key = { key: KEY }
    const started = JSON.parse((await call('POST', '/v1/workflows/echo/runs', { ...key, body: '{"input":{"ticket":"T-1"}}', headers: { 'idempotency-key': 'k-1' } })).text) as { runId: string }
    await call('POST', '/v1/workflows/echo/runs', { ...key, body: '{"input":{"ticket":"T-1"}}', headers: { 'idempotency-key': 'k-1' } })
    await call('POST', '/v1/workflows/echo/runs', { ...key, body: '{"input":{"ticket":"T-2"}}', headers: { 'idempotency-key': 'k-1' } })
    await call('POST', '/v1/workflows/echo/runs', { ...key, body: '{"input":{"ticket":""}}' })
    await call('POST', '/v1/workflows/nope/runs', { ...key, body: '{}' })
    await call('POST', '/v1/workflows/echo/runs', { ...key, body: 'x'.repeat(8192) })
    await call('POST', '/v1/workflows/echo/runs', { ...key, body: 'ticket=T-1', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    await call('POST', '/v1/workflows/echo/runs', { ...key, body: '{}', headers: { origin: 'http://evil.example.com' } })
    await call('POST', '/v1/workflows/echo/runs', { key: READER, body: '{"input":{"ticket":"T-1"}}' })
    await call('GET', '/v1/workflows', {})
    await call('GET', '/v1/workflows')
    await call('GET', `/v1/runs/${started.runId}/result?wait=10`)
    const failed = JSON.parse((await call('POST', '/v1/workflows/fails/runs', { ...key, body: '{}' })).text) as { runId: string }
    await call('GET', `/v1/runs/${failed.runId}/result?wait=10`)
    const waiting = JSON.parse((await call('POST', '/v1/workflows/approval/runs', { ...key, body: '{}' })).text) as { runId: string }
    const deferredId = await until(async () => (await runtime.pendingDeferrals(waiting.runId))[0]?.deferredId, 'the deferral')
    const hanging = JSON.parse((await call('POST', '/v1/workflows/waits/runs', { ...key, body: '{}' })).text) as { runId: string }
    for (const runId of [started.runId, failed.runId, waiting.runId, hanging.runId]) {
      await call('GET', `/v1/runs/${runId}`)
      await call('GET', `/v1/runs/${runId}/journal?after=0&limit=50`)
      await call('GET', `/v1/runs/${runId}/deferred`)
      await call('POST', `/v1/runs/${runId}/events-token`)
    }
    await call('GET', `/v1/runs/${hanging.runId}/result?wait=0`)
    await call('GET', '/v1/runs?limit=2')
    await call('GET', '/v1/runs?limit=1000')
    await call('GET', '/v1/runs/no-such-run')
    await call('GET', '/v1/runs/-bad')
    await call('GET', '/v1/runs/-bad/deferred')
    await call('GET', `/v1/runs/${started.runId}/journal?execution=resume-009`)
    await call('GET', `/v1/runs/${started.runId}/events?after=999`)
    await call('GET', `/v1/runs/${started.runId}/stream`)
    await call('GET', `/v1/runs/${started.runId}/stream?format=raw&after=999`)
    await call('GET', `/v1/runs/${started.runId}/stream?format=raw`, { headers: { 'last-event-id': 'x' } })
    await call('GET', '/v1/runs/no-such-run/stream')
    await call('POST', `/v1/runs/${waiting.runId}/deferred/${deferredId}/resolve`, { ...key, body: '{"result":{"approved":"yes"}}' })
    await call('POST', `/v1/runs/${waiting.runId}/deferred/nope/resolve`, { ...key, body: '{"result":{"approved":true}}' })
    await call('POST', `/v1/runs/${waiting.runId}/deferred/${deferredId}/resolve`, { ...key, body: '{"result":{"approved":true}}' })
    await call('POST', `/v1/runs/${waiting.runId}/deferred/${deferredId}/reject`, { ...key, body: '{"error":"changed my mind"}' })
    await call('POST', `/v1/runs/${hanging.runId}/resume`, { ...key })
    await call('POST', `/v1/runs/${hanging.runId}/cancel`, { ...key })
    await call('GET', `/v1/runs/${hanging.runId}/result?wait=10`)
    await call('POST', `/v1/runs/${hanging.runId}/cancel`, { ...key })
    await call('POST', `/v1/runs/${failed.runId}/resume`, { ...key })
    await call('GET', '/v1/worker/triggers?worker=w&tools=x', { ...key })
    await call('POST', '/v1/worker/actions?worker=w', { ...key, body: '{"actions":[]}' })
    await call('POST', '/v1/deploy-check', { ...key, body: '{}' })
    await call('POST', '/mcp', {
      ...key,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
      headers: { accept: 'application/json, text/event-stream' },
    })
    await call('GET', '/mcp', { ...key })
    await call('DELETE', '/mcp', { ...key })
    await call('GET', '/mcp', {})
    for (const path of ['/openapi.json', '/healthz', '/readyz']) await call('GET', path, {})
    expect(problems).toEqual([])
    expect(seen).toContain('GET /v1/runs/-bad/deferred 400')
    // The statuses this drove, so a route that stopped answering one shows here.
    for (const expected of ['202', '200', '409', '400', '404', '413', '415', '403', '401']) expect(seen.some((line) => line.endsWith(` ${expected}`)), expected).toBe(true)
  })
})
