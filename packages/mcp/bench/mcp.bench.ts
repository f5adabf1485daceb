// An MCP tool call to a trivial Locus workflow, over the SDK's InMemoryTransport,
// against a bare McpServer tool on the same transport: one that answers at once
// (the protocol's floor) and one that runs the same workflow with
// runWorkflowScript itself (the fair comparison: what the MCP layer adds).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { measure, printTable, reportTarget } from '@locus/bench-kit'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { defineWorkflow, runWorkflowScript } from '@locus/runtime'
import { z } from 'zod'
import { createLocusMcpServer } from '../src/index.js'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const calls = smoke ? 20 : 300
const rounds = smoke ? 1 : 5
const scratch = mkdtempSync(join(tmpdir(), 'locus-mcp-bench-'))

const trivial = defineWorkflow({ name: 'trivial', input: z.object({ text: z.string() }), run: ({ input }) => ({ ok: true, echoed: input.text }) })

async function clientOf(server: { connect(transport: Transport): Promise<void> }): Promise<Client> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
  await server.connect(serverTransport)
  const client = new Client({ name: 'bench', version: '1.0.0' })
  await client.connect(clientTransport)
  return client
}

const bare = new McpServer({ name: 'bare', version: '1.0.0' })
bare.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => ({ content: [{ type: 'text', text }], structuredContent: { echoed: text } }))
const bareRunning = new McpServer({ name: 'bare-running', version: '1.0.0' })
bareRunning.registerTool('trivial', { inputSchema: { text: z.string() } }, async ({ text }) => {
  const run = await runWorkflowScript(trivial, { input: { text }, runsDir: join(scratch, 'bare') })
  return { content: [{ type: 'text', text: JSON.stringify(run.result) }], structuredContent: { result: run.result } }
})
const locus = createLocusMcpServer({ workflows: [trivial], runOptions: { runsDir: join(scratch, 'locus') } })

const clients = { bare: await clientOf(bare), bareRunning: await clientOf(bareRunning), locus: await clientOf(locus) }

async function callMany(client: Client, name: string): Promise<void> {
  for (let index = 0; index < calls; index += 1) {
    const result = await client.callTool({ name, arguments: { text: 'hello' } })
    if (result.isError === true) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`)
  }
}

try {
  const results = await measure(
    [
      { name: 'bare McpServer tool, answers at once', operations: calls, run: () => callMany(clients.bare, 'echo') },
      { name: 'bare McpServer tool running the workflow', operations: calls, run: () => callMany(clients.bareRunning, 'trivial') },
      { name: 'createLocusMcpServer workflow tool', operations: calls, run: () => callMany(clients.locus, 'trivial') },
    ],
    { rounds, warmupRounds: smoke ? 0 : 1 },
  )
  const ratios = printTable(`@locus/mcp: ${calls} sequential tools/call over InMemoryTransport`, results, 'bare McpServer tool running the workflow')
  reportTarget('Locus workflow tool vs bare McpServer tool running the same workflow', ratios.get('createLocusMcpServer workflow tool') ?? Number.NaN, 2)
} finally {
  for (const client of Object.values(clients)) await client.close()
  rmSync(scratch, { recursive: true, force: true })
}
