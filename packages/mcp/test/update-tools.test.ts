import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { createRuntime, defineWorkflow } from '@locus/runtime'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createLocusMcpServer } from '../src/index.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const counter = defineWorkflow({
  name: 'counter',
  signals: { stop: z.null() },
  updates: { add: { input: z.object({ by: z.int() }), output: z.object({ total: z.int() }), validate: (input) => ((input as { by: number }).by === 0 ? 'by: adding 0 does nothing' : undefined) } },
  async run({ onUpdate, waitForSignal }) {
    let total = 0
    onUpdate('add', (input) => ({ total: (total += (input as { by: number }).by) }))
    await waitForSignal('stop')
    return { ok: true, total }
  },
})

describe('MCP tools for declared updates', () => {
  it('lists <workflow>__update__<name> with its input schema, answers the handler result, and refuses a rejected input as a tool error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'locus-mcp-update-'))
    dirs.push(dir)
    const runtime = createRuntime({ workflows: [counter], runsDir: dir })
    const server = createLocusMcpServer({ runtime })
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
    await server.connect(serverTransport)
    const client = new Client({ name: 'test-client', version: '1.0.0' })
    await client.connect(clientTransport)
    const { tools } = await client.listTools()
    const tool = tools.find((listed) => listed.name === 'counter__update__add')
    expect(tool?.inputSchema).toMatchObject({ type: 'object', properties: { runId: { type: 'string' }, input: { type: 'object', properties: { by: { type: 'integer' } } } }, required: ['runId'] })
    const run = await runtime.start('counter', { input: null })
    const answered = await client.callTool({ name: 'counter__update__add', arguments: { runId: run.runId, input: { by: 4 } } })
    expect(answered.isError).toBeFalsy()
    expect(answered.structuredContent).toMatchObject({ runId: run.runId, name: 'add', status: 'completed', result: { total: 4 } })
    const refused = await client.callTool({ name: 'counter__update__add', arguments: { runId: run.runId, input: { by: 0 } } })
    expect(refused.isError).toBe(true)
    expect(refused.structuredContent).toMatchObject({ status: 'rejected', issues: ['by: adding 0 does nothing'] })
    await runtime.signal(run.runId, 'stop', null)
    expect((await run.done).result).toEqual({ ok: true, total: 4 })
    const received = (await runtime.get(run.runId)).view.updates()
    expect(received.map((line) => [line.from, line.via])).toEqual([['mcp', 'api']])
    await client.close()
  })
})
