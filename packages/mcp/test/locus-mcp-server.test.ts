import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import { createPriceTable, parsePriceFile } from '@locus/cost'
import { createScriptedHost, defineDeferredTool, defineWorkflow, readStoredRun } from '@locus/runtime'
import { createFileRunStore } from '@locus/store'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createLocusMcpServer } from '../src/index.js'

const textOf = (result: unknown): string => ((result as { content: { text?: string }[] }).content).map((part) => part.text ?? '').join('\n')
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
const approval = defineWorkflow({
  name: 'refund',
  input: z.object({ amount: z.number() }),
  tools: { sign_off: defineDeferredTool({ input: z.object({ amount: z.number() }), output: z.object({ approved: z.boolean() }) }) },
  run: async ({ input, tool }) => ({ ok: true, decision: await tool('sign_off', { amount: input.amount }) }),
})

async function connected() {
  const dir = mkdtempSync(join(tmpdir(), 'locus-mcp-server-'))
  dirs.push(dir)
  const host = createScriptedHost({ rules: [{ match: { prompt: 'hang' }, steps: [{ hang: true }] }, { steps: [{ text: 'the answer' }] }] })
  const server = createLocusMcpServer({ workflows: [complete, partial, waits, approval], runOptions: { host, runsDir: join(dir, 'runs') } })
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
    expect(tools.map((tool) => tool.name)).toEqual(['summarise', 'research', 'waits', 'refund', 'locus_run_status', 'locus_run_result', 'locus_resolve_deferred'])
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

  it('reports an agent attempt that threw as ended, so every started attempt has an end in the progress', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'locus-mcp-server-'))
    dirs.push(dir)
    const host = createScriptedHost({ rules: [{ steps: [{ throw: 'provider-error' }, { text: 'second try' }] }] })
    const caught = defineWorkflow({
      name: 'caught',
      run: async ({ agent }) => {
        const first = await agent('ask').catch(() => undefined)
        return { ok: true, answer: first?.answer ?? (await agent('ask again')).answer }
      },
    })
    const server = createLocusMcpServer({ workflows: [caught], runOptions: { host, runsDir: join(dir, 'runs') } })
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
    await server.connect(serverTransport)
    const client = new Client({ name: 'test-client', version: '1.0.0' })
    await client.connect(clientTransport)
    const progress: string[] = []
    const result = await client.callTool({ name: 'caught', arguments: {} }, undefined, { onprogress: (event) => progress.push(event.message ?? '') })
    expect(result.structuredContent).toMatchObject({ disposition: 'completed', result: { answer: 'second try' } })
    expect(progress).toEqual([
      'agent default attempt 1/1 started',
      'agent default attempt 1/1 threw (provider-error)',
      'agent default attempt 1/1 started',
      'agent default attempt 1/1 completed',
    ])
    await client.close()
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
    const [run] = await store.listRuns()
    const requested: unknown[] = []
    for await (const line of store.readLines({ runId: run?.runId ?? '', executionId: run?.runId ?? '' })) if (line.type === 'run_cancel_requested') requested.push(line)
    expect(requested).toEqual([expect.objectContaining({ by: 'mcp' })])
    await close()
  })

  it('resolves a deferred tool the run waits on through locus_resolve_deferred; a result that does not fit leaves it open', async () => {
    const { client, close } = await connected()
    let opened: (found: { runId: string; deferredId: string }) => void = () => undefined
    const waiting = new Promise<{ runId: string; deferredId: string }>((resolve) => {
      opened = resolve
    })
    const call = client.callTool({ name: 'refund', arguments: { amount: 40 } }, undefined, {
      onprogress: (event) => {
        const match = /run (\S+), deferral (\S+);/.exec(event.message ?? '')
        if (match !== null) opened({ runId: match[1] ?? '', deferredId: match[2] ?? '' })
      },
    })
    const { runId, deferredId } = await waiting
    const status = await client.callTool({ name: 'locus_run_status', arguments: { runId } })
    expect(status.structuredContent).toMatchObject({ disposition: 'unfinished', deferred: [{ deferredId, tool: 'sign_off', args: { amount: 40 } }] })
    const neither = await client.callTool({ name: 'locus_resolve_deferred', arguments: { runId, deferredId } })
    expect(neither.isError).toBe(true)
    expect(textOf(neither)).toMatch(/exactly one of "result".*or "error"/)
    const invalid = await client.callTool({ name: 'locus_resolve_deferred', arguments: { runId, deferredId, result: { approved: 'yes' } } })
    expect(invalid).toMatchObject({ isError: true, structuredContent: { status: 'invalid' } })
    const accepted = await client.callTool({ name: 'locus_resolve_deferred', arguments: { runId, deferredId, result: { approved: true } } })
    expect(accepted).toMatchObject({ structuredContent: { runId, deferredId, status: 'accepted' } })
    expect(accepted.isError).not.toBe(true)
    const result = await call
    expect(result.isError).toBe(false)
    expect(result.structuredContent).toMatchObject({ runId, disposition: 'completed', result: { ok: true, decision: { approved: true } } })
    const again = await client.callTool({ name: 'locus_resolve_deferred', arguments: { runId, deferredId, result: { approved: false } } })
    expect(again).toMatchObject({ isError: true, structuredContent: { status: 'conflict' } })
    await close()
  })

  it('rejects a deferral with an error, which fails the tool call terminally', async () => {
    const { client, close } = await connected()
    let opened: (found: { runId: string; deferredId: string }) => void = () => undefined
    const waiting = new Promise<{ runId: string; deferredId: string }>((resolve) => {
      opened = resolve
    })
    const call = client.callTool({ name: 'refund', arguments: { amount: 9000 } }, undefined, {
      onprogress: (event) => {
        const match = /run (\S+), deferral (\S+);/.exec(event.message ?? '')
        if (match !== null) opened({ runId: match[1] ?? '', deferredId: match[2] ?? '' })
      },
    })
    const { runId, deferredId } = await waiting
    const rejected = await client.callTool({ name: 'locus_resolve_deferred', arguments: { runId, deferredId, error: 'too much', code: 'refused' } })
    expect(rejected.isError).not.toBe(true)
    const result = await call
    expect(result).toMatchObject({ isError: true, structuredContent: { disposition: 'failed' } })
    expect(JSON.stringify(result.content)).toMatch(/too much/)
    await close()
  })

  it('names an unknown run to locus_resolve_deferred', async () => {
    const { client, close } = await connected()
    const result = await client.callTool({ name: 'locus_resolve_deferred', arguments: { runId: 'no-such-run', deferredId: 'x', result: {} } })
    expect(result.isError).toBe(true)
    // The run id only: not the runs directory, not a CLI command.
    expect(result.content).toEqual([{ type: 'text', text: 'No run "no-such-run".' }])
    await close()
  })

  it('answers an unknown tool name with the JSON-RPC error -32602 (invalid params), as the MCP specification prescribes', async () => {
    const { client, close } = await connected()
    const refused = await client.callTool({ name: 'no_such_tool', arguments: {} }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(refused).toBeInstanceOf(McpError)
    expect((refused as McpError).code).toBe(ErrorCode.InvalidParams)
    expect((refused as McpError).code).toBe(-32602)
    expect((refused as McpError).message).toContain('No tool "no_such_tool"')
    await close()
  })
})

describe('what a run cost, in its tool results', () => {
  async function pricedClient(priced: boolean) {
    const dir = mkdtempSync(join(tmpdir(), 'locus-mcp-cost-'))
    dirs.push(dir)
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'the answer', usage: { inputTokens: 500, outputTokens: 50 } }] }] })
    const prices = createPriceTable({ prices: parsePriceFile({ models: { scripted: { input: '2', output: '8' } } }) })
    const server = createLocusMcpServer({ workflows: [complete], runOptions: { host, runsDir: join(dir, 'runs'), ...(priced ? { prices } : {}) } })
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
    await server.connect(serverTransport)
    const client = new Client({ name: 'test-client', version: '1.0.0' })
    await client.connect(clientTransport)
    return { client, table: prices.version }
  }

  it('carries the priced run’s cost as structured content and text, in the run’s own result, its status and its result', async () => {
    const { client, table } = await pricedClient(true)
    const result = await client.callTool({ name: 'summarise', arguments: { ticket: 'T-1' } })
    // 500 prompt tokens at $2 per million and 50 written at $8 per million: $0.0014.
    const cost = { usd: '0.001400', retryOverheadUsd: '0.000000', unpricedRequests: 0, table }
    expect(result.structuredContent).toMatchObject({ disposition: 'completed', cost })
    expect(textOf(result)).toContain('Cost: $0.001400 for LLM requests')
    const runId = (result.structuredContent as { runId: string }).runId
    expect((await client.callTool({ name: 'locus_run_status', arguments: { runId } })).structuredContent).toMatchObject({ cost })
    expect((await client.callTool({ name: 'locus_run_result', arguments: { runId } })).structuredContent).toMatchObject({ cost })
    await client.close()
  })

  it('is null for a run that was not priced', async () => {
    const { client } = await pricedClient(false)
    const result = await client.callTool({ name: 'summarise', arguments: { ticket: 'T-1' } })
    expect(result.structuredContent).toMatchObject({ disposition: 'completed', cost: null })
    expect(textOf(result)).not.toContain('Cost:')
    const runId = (result.structuredContent as { runId: string }).runId
    expect((await client.callTool({ name: 'locus_run_status', arguments: { runId } })).structuredContent).toMatchObject({ cost: null })
    await client.close()
  })
})
