// `locus mcp --prices`: each tool result of a run carries what the run cost (issue #32, surfaces).
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { describe, expect, it } from 'vitest'
import { cleanEnv, cliPath, repoRoot, tempDir } from './helpers.js'

const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')

describe('locus mcp --prices, driven by the MCP SDK’s own Client over stdio', () => {
  it('answers a run with its cost as structured content, and its status with the same', async () => {
    const dir = await tempDir()
    await writeFile(
      join(dir, 'priced.mts'),
      [`import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`, "export default defineWorkflow({ name: 'priced', run: async ({ agent }) => ({ ok: true, answer: (await agent('go')).answer }) })"].join('\n'),
    )
    await writeFile(join(dir, 'answers.json'), JSON.stringify({ rules: [{ steps: [{ text: 'done', usage: { inputTokens: 1000, outputTokens: 250 } }] }] }))
    await writeFile(join(dir, 'prices.json'), JSON.stringify({ models: { scripted: { input: '3', output: '15' } } }))
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cliPath, 'mcp', '--workflows', dir, '--host', 'scripted', '--fixtures', join(dir, 'answers.json'), '--prices', 'prices.json', '--runs-dir', join(dir, 'runs')],
      cwd: dir,
      env: cleanEnv() as Record<string, string>,
      stderr: 'ignore',
    })
    const client = new Client({ name: 'test', version: '1.0.0' })
    await client.connect(transport)
    try {
      const done = await client.callTool({ name: 'priced', arguments: {} })
      // 1,000 prompt tokens at $3 per million and 250 written at $15 per million: $0.00675.
      expect(done.structuredContent).toMatchObject({ disposition: 'completed', cost: { usd: '0.006750', retryOverheadUsd: '0.000000', unpricedRequests: 0, table: expect.stringMatching(/^sha256:/) } })
      const runId = (done.structuredContent as { runId: string }).runId
      const status = await client.callTool({ name: 'locus_run_status', arguments: { runId } })
      expect(status.structuredContent).toMatchObject({ cost: { usd: '0.006750' } })
    } finally {
      await client.close()
    }
  })
})
