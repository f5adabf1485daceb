import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { createScriptedHost, defineWorkflow, readStoredRun } from '@locus/runtime'
import { createFileRunStore } from '@locus/store'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createLocusMcpServer } from '../src/index.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const complete = defineWorkflow({
  name: 'summarise',
  description: 'Summarises a ticket.',
  input: z.object({ ticket: z.string() }),
  run: async ({ input, agent }) => ({ ok: true, summary: (await agent(`summarise ${input.ticket}`)).answer }),
})
const partial = defineWorkflow({
  name: 'research',
  run: async ({ agent }) => {
    await agent('look')
    return { ok: true, answer: { text: 'half', found: true, partial: true, gaps: [{ tool: 'payments', criticality: 'enriching', reason: 'timeout' }], caveats: ['Payments could not be checked.'] } }
  },
})
const waits = defineWorkflow({ name: 'waits', run: async ({ agent }) => ({ ok: true, answer: (await agent('hang')).answer }) })

async function connected() {
  const dir = mkdtempSync(join(tmpdir(), 'locus-mcp-server-'))
  dirs.push(dir)
  const host = createScriptedHost({ rules: [{ match: { prompt: 'hang' }, steps: [{ hang: true }] }, { steps: [{ text: 'the answer' }] }] })
  const server = createLocusMcpServer({ workflows: [complete, partial, waits], runOptions: { host, runsDir: join(dir, 'runs') } })
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
  await server.connect(serverTransport)
  const client = new Client({ name: 'test-client', version: '1.0.0' })
  await client.connect(clientTransport)
  return { client, runsDir: join(dir, 'runs'), close: () => client.close() }
}

describe('createLocusMcpServer, called by the SDK’s own Client', () => {
  it('lists each workflow with its input JSON Schema, and the run tools', async () => {
    const { client, close } = await connected()
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(['summarise', 'research', 'waits', 'locus_run_status', 'locus_run_result'])
    expect(tools[0]?.inputSchema).toMatchObject({ type: 'object', properties: { ticket: { type: 'string' } }, required: ['ticket'] })
    await close()
  })

  it('answers a completed run as a success with structured content, and reports progress', async () => {
    const { client, close } = await connected()
    const progress: string[] = []
    const result = await client.callTool({ name: 'summarise', arguments: { ticket: 'T-1' } }, undefined, { onprogress: (event) => progress.push(event.message ?? '') })
    expect(result.isError).toBe(false)
    expect(result.structuredContent).toMatchObject({ disposition: 'completed', answerOutcome: 'complete', result: { ok: true, summary: 'the answer' } })
    expect(progress).toEqual(['agent default attempt 1/1 started', 'agent default attempt 1/1 completed'])
    const status = await client.callTool({ name: 'locus_run_status', arguments: { runId: (result.structuredContent as { runId: string }).runId } })
    expect(status.structuredContent).toMatchObject({ disposition: 'completed', agentCalls: 1 })
    await close()
  })

  it('answers a partial run with isError and its gaps and caveats as fields, not prose alone', async () => {
    const { client, close } = await connected()
    const result = await client.callTool({ name: 'research', arguments: {} })
    expect(result.isError).toBe(true)
    expect(result.structuredContent).toMatchObject({
      answerOutcome: 'partial',
      gaps: [{ tool: 'payments', criticality: 'enriching', reason: 'timeout' }],
      caveats: ['Payments could not be checked.'],
    })
    await close()
  })

  it('refuses bad input with the issues named, as a tool error', async () => {
    const { client, close } = await connected()
    const result = await client.callTool({ name: 'summarise', arguments: { ticket: 42 } })
    expect(result.isError).toBe(true)
    expect(JSON.stringify(result.content)).toMatch(/ticket/)
    await close()
  })

  it('cancels the run when the client cancels the call', async () => {
    const { client, runsDir, close } = await connected()
    const controller = new AbortController()
    let runStarted: () => void = () => undefined
    const started = new Promise<void>((resolve) => {
      runStarted = resolve
    })
    const call = client.callTool({ name: 'waits', arguments: {} }, undefined, {
      signal: controller.signal,
      onprogress: () => {
        runStarted()
      },
    })
    await started
    controller.abort('the user gave up')
    await expect(call).rejects.toThrow()
    const store = createFileRunStore(runsDir)
    let standing = 'unfinished'
    for (let tries = 0; tries < 100 && standing === 'unfinished'; tries += 1) {
      const [run] = await store.listRuns()
      if (run !== undefined) standing = (await readStoredRun(store, run.runId)).latest.summary.standing
      if (standing === 'unfinished') await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(standing).toBe('cancelled')
    await close()
  })
})
