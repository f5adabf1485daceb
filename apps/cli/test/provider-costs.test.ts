// Recorded provider responses priced exactly (issue #32, done-when): OpenAI, Anthropic and
// Google each answer a real `locus run --provider` with a response recorded in its own shape,
// prompt-cache and reasoning tokens included. The journaled usage carries those tokens, the
// journaled cost equals usage times the table (worked out here with decimal.js, apart from
// @locus/cost), and `locus show`, the outputs README and GET /v1/runs/{id} give the same total.
import { readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type WireServer, createWireServer } from '@locus/host-ai-sdk/testing'
import { createRuntime } from '@locus/runtime'
import { createServer } from '@locus/server'
import { Decimal } from 'decimal.js'
import { afterEach, describe, expect, it } from 'vitest'
import { jsonLines, repoRoot, runLocus, tempDir } from './helpers.js'

const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')

interface Recorded {
  readonly model: string
  readonly body: { readonly usage?: Record<string, unknown>; readonly usageMetadata?: Record<string, unknown> }
}
type PriceRow = Readonly<Record<'input' | 'output' | 'cacheRead' | 'cacheWrite' | 'reasoning', string | undefined>>
const fixtures = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'recorded-provider-responses.json'), 'utf8')) as {
  readonly openai: Recorded
  readonly anthropic: Recorded
  readonly google: Recorded
  readonly prices: { readonly models: Readonly<Record<string, PriceRow>> }
}

interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens?: number
  readonly cacheWriteTokens?: number
  readonly reasoningTokens?: number
}

const num = (value: unknown): number => {
  if (typeof value !== 'number') throw new Error(`expected a token count, got ${JSON.stringify(value)}`)
  return value
}

/** What each provider's documentation says its usage fields mean, read straight from the recorded body. */
const usageOf = {
  // prompt_tokens counts the cached ones; completion_tokens the reasoning ones. OpenAI reports no cache writes.
  openai: ({ usage = {} }: Recorded['body']): Usage => ({
    inputTokens: num(usage.prompt_tokens),
    outputTokens: num(usage.completion_tokens),
    cacheReadTokens: num((usage.prompt_tokens_details as Record<string, unknown>).cached_tokens),
    reasoningTokens: num((usage.completion_tokens_details as Record<string, unknown>).reasoning_tokens),
  }),
  // input_tokens counts only what was neither read from nor written to the cache. Anthropic reports no reasoning count.
  anthropic: ({ usage = {} }: Recorded['body']): Usage => ({
    inputTokens: num(usage.input_tokens) + num(usage.cache_creation_input_tokens) + num(usage.cache_read_input_tokens),
    outputTokens: num(usage.output_tokens),
    cacheReadTokens: num(usage.cache_read_input_tokens),
    cacheWriteTokens: num(usage.cache_creation_input_tokens),
  }),
  // promptTokenCount counts the cached content; thoughts are counted apart from the candidates.
  google: ({ usageMetadata = {} }: Recorded['body']): Usage => ({
    inputTokens: num(usageMetadata.promptTokenCount),
    outputTokens: num(usageMetadata.candidatesTokenCount) + num(usageMetadata.thoughtsTokenCount),
    cacheReadTokens: num(usageMetadata.cachedContentTokenCount),
    reasoningTokens: num(usageMetadata.thoughtsTokenCount),
  }),
} as const

/** Dollars for `usage` at `row` (dollars per million tokens), with decimal.js alone. */
function expectedUsd(usage: Usage, row: PriceRow): Decimal {
  const perToken = (price: string | undefined, fallback: string | undefined) => new Decimal(price ?? fallback ?? 'NaN').div(1_000_000)
  const cacheRead = usage.cacheReadTokens ?? 0
  const cacheWrite = usage.cacheWriteTokens ?? 0
  const reasoning = usage.reasoningTokens ?? 0
  return perToken(row.input, undefined)
    .mul(usage.inputTokens - cacheRead - cacheWrite)
    .add(perToken(row.cacheRead, row.input).mul(cacheRead))
    .add(perToken(row.cacheWrite, row.input).mul(cacheWrite))
    .add(perToken(row.output, undefined).mul(usage.outputTokens - reasoning))
    .add(perToken(row.reasoning, row.output).mul(reasoning))
}

const servers: WireServer[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close()
})

const cases = [
  { provider: 'openai', recorded: fixtures.openai },
  { provider: 'anthropic', recorded: fixtures.anthropic },
  { provider: 'google', recorded: fixtures.google },
] as const

describe.each(cases)('a recorded $provider response', ({ provider, recorded }) => {
  it('is journaled with its cache and reasoning tokens and priced to the cent-fraction, and every surface shows the same total', async () => {
    const dir = await tempDir()
    await writeFile(
      join(dir, 'triage.mts'),
      [`import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`, 'export default defineWorkflow({ name: "triage", run: async ({ agent }) => ({ ok: true, answer: (await agent("Triage T-7")).answer }) })'].join('\n'),
    )
    await writeFile(join(dir, 'prices.json'), JSON.stringify(fixtures.prices))
    const server = await createWireServer(provider, { replies: [{ kind: 'recorded', body: recorded.body }] })
    servers.push(server)
    const run = await runLocus(
      ['run', 'triage.mts', '--provider', provider, '--base-url', server.baseURL, '--model', recorded.model, '--api-key', 'k', '--no-stream', '--prices', 'prices.json', '--runs-dir', 'runs', '--run-id', 'rec', '--json'],
      { cwd: dir },
    )
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(server.requests).toHaveLength(1)

    const usage = usageOf[provider](recorded.body)
    const row = fixtures.prices.models[recorded.model]
    if (row === undefined) throw new Error(`no price for ${recorded.model} in the fixtures`)
    const usd = expectedUsd(usage, row)
    // Cache and reasoning tokens are a real part of each bill here, so a cost that ignored them would differ.
    expect(usd.eq(expectedUsd({ inputTokens: usage.inputTokens, outputTokens: usage.outputTokens }, row))).toBe(false)

    const lines = jsonLines(run.stdout)
    const llm = lines.filter((line) => line.type === 'llm_attempt')
    expect(llm).toHaveLength(1)
    expect(llm[0]?.usage).toEqual(usage)
    const cost = llm[0]?.cost as { usd: string; table: string }
    expect(new Decimal(cost.usd).eq(usd)).toBe(true)
    expect(lines.find((line) => line.type === 'agent_end')?.cost).toMatchObject({ usd: cost.usd })
    expect(lines.at(-1)).toMatchObject({ standing: 'completed', cost: { usd: cost.usd, unpricedRequests: 0 } })

    const shown = await runLocus(['show', 'rec', '--runs-dir', 'runs'], { cwd: dir })
    expect(shown.stdout).toContain(`$${usd.toDecimalPlaces(usd.lt(0.01) ? 6 : 4).toString()} for LLM requests`)
    expect(readFileSync(join(dir, 'runs', 'rec', 'outputs', 'README.md'), 'utf8')).toContain(`- LLM requests: $${cost.usd} (price table \`${cost.table}\`)`)
    const app = createServer({ runtime: createRuntime({ workflows: [], runsDir: join(dir, 'runs') }) })
    const body = (await (await app.request('/v1/runs/rec')).json()) as { cost: { usd: string } | null }
    expect(body.cost?.usd).toBe(cost.usd)
  })
})
