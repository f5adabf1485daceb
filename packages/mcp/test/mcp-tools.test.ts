import { mkdtempSync, rmSync } from 'node:fs'
import { readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readJournal } from '@locus/journal'
import { defineWorkflow, resumeRun, runWorkflowScript } from '@locus/runtime'
import { afterEach, describe, expect, it } from 'vitest'
import { mcpTools } from '../src/index.js'

const fixture = fileURLToPath(new URL('./fixtures/tool-server.ts', import.meta.url))
const packageDir = fileURLToPath(new URL('..', import.meta.url))
const RETRY_TWICE = { timeout_secs: null, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 }
const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

async function connect() {
  const dir = mkdtempSync(join(tmpdir(), 'locus-mcp-'))
  dirs.push(dir)
  const source = await mcpTools(
    { command: process.execPath, args: ['--import', 'tsx', fixture], cwd: packageDir, env: { CRASH_MARKER: join(dir, 'crashed') } },
    { retry: RETRY_TWICE },
  )
  return { source, runsDir: join(dir, 'runs') }
}

function journalOf(runDir: string) {
  return readJournal(join(runDir, 'journal.jsonl')).lines
}

describe('mcpTools', () => {
  it('offers an MCP server’s tools to a workflow and journals every attempt', async () => {
    const { source, runsDir } = await connect()
    try {
      expect(Object.keys(source.tools).sort()).toEqual(['crash_once', 'echo', 'refuse'])
      const workflow = defineWorkflow({
        name: 'uses-mcp',
        tools: source.tools,
        run: async ({ tool }) => ({ ok: true, echoed: await tool('echo', { text: 'hello' }) }),
      })
      const run = await runWorkflowScript(workflow, { runsDir })
      expect(run.result).toEqual({ ok: true, echoed: { echoed: 'hello' } })
      const ends = journalOf(run.runDir).filter((line) => line.type === 'tool_end')
      expect(ends).toMatchObject([{ tool: 'echo', status: 'completed', result: { echoed: 'hello' } }])
    } finally {
      await source.close()
    }
  }, 30_000)

  it('treats isError as a terminal failure, never retried', async () => {
    const { source, runsDir } = await connect()
    try {
      const workflow = defineWorkflow({ name: 'refused', tools: source.tools, run: async ({ tool }) => tool('refuse', {}) })
      const run = await runWorkflowScript(workflow, { runsDir })
      expect(run.disposition).toBe('failed')
      const ends = journalOf(run.runDir).filter((line) => line.type === 'tool_end')
      expect(ends).toHaveLength(1)
      expect(ends[0]).toMatchObject({ status: 'failed', failure: { error: 'not allowed', retryable: false } })
    } finally {
      await source.close()
    }
  }, 30_000)

  it('retries a server that died as provider_error, on a fresh server, and replays the completed call on resume', async () => {
    const { source, runsDir } = await connect()
    try {
      const workflow = defineWorkflow({ name: 'crashy', tools: source.tools, run: async ({ tool }) => ({ ok: true, value: await tool('crash_once', {}) }) })
      const run = await runWorkflowScript(workflow, { runsDir })
      expect(run.disposition).toBe('completed')
      const ends = journalOf(run.runDir).flatMap((line) => (line.type === 'tool_end' ? [line] : []))
      expect(ends.map((line) => [line.attempt, line.status, line.failure?.code])).toEqual([
        [1, 'failed', 'provider_error'],
        [2, 'completed', undefined],
      ])
      // Resume serves the completed call from the journal: the server is not asked again.
      const resumed = await resumeRun(run.runId, workflow, { runsDir })
      expect(resumed.replayed).toBe(1)
      expect(JSON.parse(readFileSync(join(resumed.executionDir, 'result.json'), 'utf8'))).toMatchObject({ result: { ok: true, value: { survived: true } } })
    } finally {
      await source.close()
    }
  }, 30_000)
})
