// `locus run --provider anthropic | google` (issue #32, providers): real CLI child
// processes against loopback servers that speak Anthropic's and Google's wire formats,
// the key from the provider's usual variable, and `locus resume` rebuilding the same provider.
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { type WireReply, type WireServer, createWireServer } from '@locus/host-ai-sdk/testing'
import { jsonLines, repoRoot, runLocus, tempDir } from './helpers.js'

const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')
const usage = { plainInputTokens: 40, cacheReadTokens: 100, cacheWriteTokens: 10, outputTokens: 30, reasoningTokens: 12 }

const servers: WireServer[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close()
})

async function serve(format: 'anthropic' | 'google', replies: readonly WireReply[]): Promise<WireServer> {
  const server = await createWireServer(format, { replies })
  servers.push(server)
  return server
}

/** A workflow of two agent calls; a failed call fails the run, which leaves it to resume. */
async function workflowDir(): Promise<string> {
  const dir = await tempDir()
  await writeFile(
    join(dir, 'two.mts'),
    [
      `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
      'export default defineWorkflow({ name: "two", run: async ({ agent }) => {',
      '  const draft = await agent("draft")',
      '  const summary = await agent("summarise")',
      '  return { ok: true, draft: draft.answer, summary: summary.answer }',
      '} })',
    ].join('\n'),
  )
  return dir
}

function runsIn(dir: string): string[] {
  const runs = join(dir, 'runs')
  return existsSync(runs) ? readdirSync(runs).filter((name) => !name.startsWith('.')) : []
}

function journal(dir: string, runId: string): Record<string, unknown>[] {
  return readFileSync(join(dir, 'runs', runId, 'journal.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}

const providers = [
  { name: 'anthropic', model: 'claude-sonnet-4-5', variable: 'ANTHROPIC_API_KEY', keyHeader: 'x-api-key', path: /^\/v1\/messages$/ },
  { name: 'google', model: 'gemini-2.5-flash', variable: 'GOOGLE_GENERATIVE_AI_API_KEY', keyHeader: 'x-goog-api-key', path: /^\/v1beta\/models\/gemini-2\.5-flash:streamGenerateContent/ },
] as const

describe.each(providers)('locus run --provider $name', (provider) => {
  it('runs against the provider with the key from its usual variable, and records the provider for resume', async () => {
    const dir = await workflowDir()
    const server = await serve(provider.name, [
      { kind: 'text', text: 'a draft', usage },
      { kind: 'text', text: 'a summary', usage },
    ])
    const run = await runLocus(['run', 'two.mts', '--provider', provider.name, '--base-url', server.baseURL, '--model', provider.model, '--runs-dir', 'runs', '--run-id', 'r1', '--json'], {
      cwd: dir,
      env: { [provider.variable]: 'key-from-env' },
    })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(jsonLines(run.stdout).at(-1)).toMatchObject({ standing: 'completed', result: { draft: 'a draft', summary: 'a summary' } })
    expect(server.requests.map((request) => request.path)).toEqual([expect.stringMatching(provider.path), expect.stringMatching(provider.path)])
    expect(server.requests.map((request) => request.headers[provider.keyHeader])).toEqual(['key-from-env', 'key-from-env'])
    const start = journal(dir, 'r1')[0] as { options?: { hostSettings?: Record<string, unknown> } }
    expect(start.options?.hostSettings).toMatchObject({ host: 'ai-sdk', api: provider.name, modelId: provider.model, baseURL: server.baseURL, apiKey: 'given' })
    expect(JSON.stringify(start)).not.toContain('key-from-env')
  })

  it('--model-host names the same provider, and --api-key wins over the variable', async () => {
    const dir = await workflowDir()
    const server = await serve(provider.name, [
      { kind: 'text', text: 'a draft', usage },
      { kind: 'text', text: 'a summary', usage },
    ])
    const run = await runLocus(
      ['run', 'two.mts', '--model-host', provider.name, '--provider', provider.name, '--base-url', server.baseURL, '--model', provider.model, '--api-key', 'from-flag', '--runs-dir', 'runs', '--quiet'],
      { cwd: dir, env: { [provider.variable]: 'key-from-env' } },
    )
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(server.requests.map((request) => request.headers[provider.keyHeader])).toEqual(['from-flag', 'from-flag'])
  })

  it('without a key says which variable to set, exits 2 and writes nothing', async () => {
    const dir = await workflowDir()
    const run = await runLocus(['run', 'two.mts', '--provider', provider.name, '--model', provider.model, '--runs-dir', 'runs'], { cwd: dir })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain(`The ${provider.name} provider needs an API key: set ${provider.variable} or pass --api-key.`)
    expect(runsIn(dir)).toEqual([])
  })

  it('locus resume rebuilds the same provider from the run, with the key from its variable again', async () => {
    const dir = await workflowDir()
    // The summary is refused once (a 400 is not retried), so the run fails after its draft.
    const server = await serve(provider.name, [
      { kind: 'text', text: 'a draft', usage },
      { kind: 'status', status: 400, message: 'refused for this test' },
      { kind: 'text', text: 'a summary', usage },
    ])
    const env = { [provider.variable]: 'key-from-env' }
    const run = await runLocus(['run', 'two.mts', '--provider', provider.name, '--base-url', server.baseURL, '--model', provider.model, '--runs-dir', 'runs', '--run-id', 'r2', '--quiet'], { cwd: dir, env })
    expect(run.code).toBe(1)
    expect(server.requests).toHaveLength(2)
    const keyless = await runLocus(['resume', 'r2', '--runs-dir', 'runs', '--quiet'], { cwd: dir })
    expect(keyless.code).toBe(2)
    expect(keyless.stderr).toContain(`set ${provider.variable} or pass --api-key`)
    const resumed = await runLocus(['resume', 'r2', '--runs-dir', 'runs'], { cwd: dir, env })
    expect(resumed.stderr).toBe('')
    expect(resumed.code).toBe(0)
    expect(resumed.stdout).toContain(`host ${provider.name} (${provider.model} at ${server.baseURL}, as the run recorded it)`)
    // The draft replays from the journal; only the summary goes to the provider again.
    expect(server.requests).toHaveLength(3)
    expect(server.requests[2]?.path).toMatch(provider.path)
    expect(server.requests[2]?.headers[provider.keyHeader]).toBe('key-from-env')
  })
})

describe('choosing a provider', () => {
  it('an unknown provider lists the known ones', async () => {
    const dir = await workflowDir()
    const run = await runLocus(['run', 'two.mts', '--provider', 'mistral', '--runs-dir', 'runs'], { cwd: dir })
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/mistral/)
    expect(run.stderr).toMatch(/openai, openai-compatible, anthropic, google/)
    expect(runsIn(dir)).toEqual([])
  })

  it('--provider and --model-host that disagree are a usage error', async () => {
    const dir = await workflowDir()
    const run = await runLocus(['run', 'two.mts', '--provider', 'anthropic', '--model-host', 'google', '--model', 'm', '--api-key', 'k', '--runs-dir', 'runs'], { cwd: dir })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('--provider anthropic and --model-host google disagree')
    expect(runsIn(dir)).toEqual([])
  })

  it('--provider openai takes OPENAI_API_KEY, and says to set it when there is none', async () => {
    const dir = await workflowDir()
    const run = await runLocus(['run', 'two.mts', '--provider', 'openai', '--model', 'gpt-4o-mini', '--runs-dir', 'runs'], { cwd: dir })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('The openai provider needs an API key: set OPENAI_API_KEY or pass --api-key.')
    expect(runsIn(dir)).toEqual([])
  })
})
