import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { createRuntime, createScriptedHost, defineDeferredTool, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { WORKFLOWS, onCleanup, tempRunsDir, testServer, waits } from './helpers.js'

const FULL = 'mcp-full-key-0123456789'
const NO_RESOLVE = 'mcp-no-resolve-0123456789'
const READ_ONLY = 'mcp-read-only-0123456789'
const KEYS = [FULL, `${NO_RESOLVE}:runs:start+runs:read`, `${READ_ONLY}:runs:read`]

async function connect(url: string, key?: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), key === undefined ? undefined : { requestInit: { headers: { authorization: `Bearer ${key}` } } })
  const client = new Client({ name: 'test', version: '1.0.0' })
  await client.connect(transport)
  onCleanup(() => client.close())
  return client
}

describe('/mcp on locus serve, driven by the MCP SDK’s own Client over streamable HTTP', () => {
  it('lists the server’s workflows as tools, runs one on the server’s runtime, and shows the run in the HTTP API', async () => {
    const server = await testServer()
    const client = await connect(server.url)
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual([...WORKFLOWS.map((workflow) => workflow.name), 'locus_run_status', 'locus_run_result', 'locus_resolve_deferred'])
    const progress: string[] = []
    const done = await client.callTool({ name: 'echo', arguments: { ticket: 'T-7' } }, undefined, { onprogress: (event) => progress.push(event.message ?? '') })
    expect(done).toMatchObject({ isError: false, structuredContent: { disposition: 'completed', result: { ok: true, answer: 'fine' } } })
    expect(progress).toEqual(['agent default attempt 1/1 started', 'agent default attempt 1/1 completed'])
    const { runId } = done.structuredContent as { runId: string }
    expect((await server.json<{ status: string }>(`/v1/runs/${runId}`)).body.status).toBe('completed')
    const partial = await client.callTool({ name: 'partial', arguments: {} })
    expect(partial).toMatchObject({ isError: true, structuredContent: { answerOutcome: 'partial', caveats: ['billing unknown'] } })
  })

  it('takes the API’s bearer keys: 401 without one, 403 without runs:start, and no locus_resolve_deferred without deferred:resolve', async () => {
    const server = await testServer({ apiKeys: KEYS })
    const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } } })
    const headers = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }
    const anonymous = await server.request('/mcp', { method: 'POST', headers, body: initialize })
    expect(anonymous.status).toBe(401)
    expect(anonymous.headers.get('www-authenticate')).toMatch(/Bearer/)
    expect((await server.request('/mcp', { method: 'POST', headers, body: initialize, key: READ_ONLY })).status).toBe(403)
    await expect(connect(server.url)).rejects.toThrow()
    const limited = await connect(server.url, NO_RESOLVE)
    expect((await limited.listTools()).tools.map((tool) => tool.name)).not.toContain('locus_resolve_deferred')
    const full = await connect(server.url, FULL)
    expect((await full.listTools()).tools.map((tool) => tool.name)).toContain('locus_resolve_deferred')
    // A session belongs to the key that opened it.
    const sessionId = (full.transport as StreamableHTTPClientTransport).sessionId ?? ''
    expect(sessionId).not.toBe('')
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })
    const stolen = await server.request('/mcp', { method: 'POST', headers: { ...headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' }, body: list, key: NO_RESOLVE })
    expect(stolen.status).toBe(404)
    const own = await server.request('/mcp', { method: 'POST', headers: { ...headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' }, body: list, key: FULL })
    expect(own.status).toBe(200)
  })

  it('resolves a deferral through locus_resolve_deferred and cancels the run when the client cancels the call', async () => {
    const approval = defineWorkflow({
      name: 'approval',
      tools: { approve: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },
      run: async ({ tool }) => ({ ok: true, approval: await tool('approve', { amount: 42 }) }),
    })
    const host = createScriptedHost({ rules: [{ match: { prompt: 'hang' }, steps: [{ hang: true }] }] })
    const runtime = createRuntime({ workflows: [approval, waits], host, runsDir: tempRunsDir() })
    const server = await testServer({ runtime })
    const client = await connect(server.url)
    let opened: (found: { runId: string; deferredId: string }) => void = () => undefined
    const waiting = new Promise<{ runId: string; deferredId: string }>((resolve) => {
      opened = resolve
    })
    const call = client.callTool({ name: 'approval', arguments: {} }, undefined, {
      onprogress: (event) => {
        const match = /run (\S+), deferral (\S+);/.exec(event.message ?? '')
        if (match !== null) opened({ runId: match[1] ?? '', deferredId: match[2] ?? '' })
      },
    })
    const { runId, deferredId } = await waiting
    expect((await server.json<{ deferred: { deferredId: string }[] }>(`/v1/runs/${runId}/deferred`)).body.deferred).toMatchObject([{ deferredId }])
    const answered = await client.callTool({ name: 'locus_resolve_deferred', arguments: { runId, deferredId, result: { approved: true } } })
    expect(answered.structuredContent).toMatchObject({ status: 'accepted' })
    expect((await call).structuredContent).toMatchObject({ disposition: 'completed', result: { approval: { approved: true } } })

    const controller = new AbortController()
    let first: () => void = () => undefined
    const running = new Promise<void>((resolve) => {
      first = resolve
    })
    const hanging = client.callTool({ name: 'waits', arguments: {} }, undefined, { signal: controller.signal, onprogress: () => { first() } })
    await running
    const live = (await server.runtime.list()).rows.find((info) => info.runId !== runId)
    controller.abort('changed my mind')
    await expect(hanging).rejects.toThrow()
    const result = await server.json<{ disposition: string }>(`/v1/runs/${live?.runId ?? ''}/result?wait=10`)
    expect(result.body.disposition).toBe('cancelled')
  })
})
