// What a run cost, as `locus run --prices` journals it and `locus show` tells it (issue #32, the journaled cost).
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { jsonLines, repoRoot, runLocus, tempDir } from './helpers.js'

const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')

async function pricedDir(): Promise<string> {
  const dir = await tempDir()
  await writeFile(
    join(dir, 'priced.mts'),
    [
      `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
      "export default defineWorkflow({ name: 'priced', run: async ({ agent }) => { await agent('draft'); return { ok: true, answer: (await agent('summarise')).answer } } })",
    ].join('\n'),
  )
  // Each turn reports its tokens, as a model host does.
  await writeFile(
    join(dir, 'priced.fixtures.json'),
    JSON.stringify({ rules: [{ steps: [{ text: 'a draft', usage: { inputTokens: 1000, outputTokens: 0 } }, { text: 'a summary', usage: { inputTokens: 1000, outputTokens: 250 } }] }] }),
  )
  await writeFile(join(dir, 'prices.json'), JSON.stringify({ models: { scripted: { input: '3', output: '15' } } }))
  return dir
}

describe('locus run --prices', () => {
  it('journals what each attempt cost, records the price table, and shows the run’s cost', async () => {
    const dir = await pricedDir()
    const run = await runLocus(['run', 'priced.mts', '--runs-dir', 'runs', '--run-id', 'priced', '--prices', 'prices.json', '--json'], { cwd: dir })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    // 1,000 in at $3 per million: $0.003; then 1,000 in and 250 out at $15 per million: $0.00675.
    expect(jsonLines(run.stdout).at(-1)).toMatchObject({ standing: 'completed', cost: { usd: '0.009750', retryOverheadUsd: '0.000000', unpricedRequests: 0 } })
    const journal = readFileSync(join(dir, 'runs', 'priced', 'journal.jsonl'), 'utf8').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Record<string, unknown>)
    const table = (journal[0]?.options as { priceTable?: string }).priceTable
    expect(table).toMatch(/^sha256:/)
    expect(journal.filter((line) => line.type === 'agent_end').map((line) => line.cost)).toEqual([
      { usd: '0.003000', table },
      { usd: '0.006750', table },
    ])
    const shown = await runLocus(['show', 'priced', '--runs-dir', 'runs'], { cwd: dir })
    expect(shown.stdout).toMatch(/cost: +\$0\.00975 for LLM requests\n/)
    const listed = await runLocus(['ls', '--runs-dir', 'runs'], { cwd: dir })
    expect(listed.stdout.trim().split('\n')[1]).toMatch(/^priced +priced .* \$0\.00975$/)
    expect(readFileSync(join(dir, 'runs', 'priced', 'outputs', 'README.md'), 'utf8')).toContain(`## Cost\n\n- LLM requests: $0.009750 (price table \`${String(table)}\`)\n`)
  })

  it('refuses a price file with a negative price, naming the field, and writes nothing', async () => {
    const dir = await pricedDir()
    await writeFile(join(dir, 'bad.json'), JSON.stringify({ models: { scripted: { input: '-1', output: '15' } } }))
    const run = await runLocus(['run', 'priced.mts', '--runs-dir', 'runs', '--prices', 'bad.json'], { cwd: dir })
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/--prices bad\.json: models\["scripted"\]\.input/)
    expect(existsSync(join(dir, 'runs')) ? readdirSync(join(dir, 'runs')).filter((name) => !name.startsWith('.')) : []).toEqual([])
  })
})

describe('locus run --max-cost', () => {
  it('does not run a call the budget cannot cover: the answer says so and show tells the budget left', async () => {
    const dir = await pricedDir()
    // The draft's worst case (13 prompt tokens at $3 and 8,000 output tokens at $15 per million: $0.120039) fits $0.121;
    // once it spent $0.003, the summary's does not.
    const run = await runLocus(['run', 'priced.mts', '--runs-dir', 'runs', '--run-id', 'capped', '--prices', 'prices.json', '--max-cost', '0.121', '--json'], { cwd: dir })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(1)
    expect(jsonLines(run.stdout).at(-1)).toMatchObject({
      answerOutcome: 'cannot_answer',
      gaps: [{ tool: 'default', criticality: 'required', reason: "not run: the run's cost budget of $0.121 was spent" }],
      costBudget: { limitUsd: '0.121000', leftUsd: '0.118000' },
    })
    const journal = readFileSync(join(dir, 'runs', 'capped', 'journal.jsonl'), 'utf8').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Record<string, unknown>)
    expect((journal[0]?.options as { budgets?: { maxCostUsd?: string } }).budgets?.maxCostUsd).toBe('0.121000')
    expect(journal.filter((line) => line.type === 'error').map((line) => line.failureCause)).toEqual(['cost-budget'])
    const shown = await runLocus(['show', 'capped', '--runs-dir', 'runs'], { cwd: dir })
    expect(shown.stdout).toMatch(/budget: +\$0\.118 left of \$0\.121 \(--max-cost\)\n/)
    expect(readFileSync(join(dir, 'runs', 'capped', 'outputs', 'README.md'), 'utf8')).toContain('- Budget: $0.121000 for the run (`maxCostUsd`); 1 call not run because it could not be afforded\n')
  })

  it('refuses a budget that is not a positive decimal with exit 2, and writes nothing', async () => {
    const dir = await pricedDir()
    for (const bad of ['0', '-2', 'lots', '1e2']) {
      const run = await runLocus(['run', 'priced.mts', '--runs-dir', 'runs', '--prices', 'prices.json', '--max-cost', bad], { cwd: dir })
      expect(run.code).toBe(2)
      expect(run.stderr).toContain(`--max-cost must be a positive decimal number of dollars, such as 2.50; got "${bad}"`)
    }
    expect(existsSync(join(dir, 'runs')) ? readdirSync(join(dir, 'runs')).filter((name) => !name.startsWith('.')) : []).toEqual([])
  })

  it('refuses a model with no price under a budget, naming it and --prices, unless --allow-unpriced', async () => {
    const dir = await pricedDir()
    const refused = await runLocus(['run', 'priced.mts', '--runs-dir', 'runs', '--max-cost', '1'], { cwd: dir })
    expect(refused.code).toBe(2)
    expect(refused.stderr).toMatch(/A cost budget of \$1\.00 cannot be kept: model "scripted" has no price.*--prices prices\.json.*--allow-unpriced/)
    expect(existsSync(join(dir, 'runs')) ? readdirSync(join(dir, 'runs')).filter((name) => !name.startsWith('.')) : []).toEqual([])
    const allowed = await runLocus(['run', 'priced.mts', '--runs-dir', 'runs', '--max-cost', '1', '--allow-unpriced', '--quiet'], { cwd: dir })
    expect(allowed.code).toBe(0)
  })
})
