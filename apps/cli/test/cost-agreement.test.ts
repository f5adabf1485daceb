// Every surface that tells a run's cost tells the same figures (issue #32): `locus show`, the outputs README,
// `GET /v1/runs/{id}`, the inspector's run page and `locus report`, for a run with a retried call and a child run.
import { readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { repoRoot, runLocus, settle, startLocus, tempDir, waitForOutput } from './helpers.js'

const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')

/** A workflow whose draft fails once after spending tokens (retried), then spawns a child that asks its own agent. */
async function agreementProject(): Promise<string> {
  const dir = await tempDir()
  await writeFile(
    join(dir, 'agree.mts'),
    [
      `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
      "const helper = defineWorkflow({ name: 'helper', run: async ({ agent }) => ({ ok: true, answer: (await agent('research')).answer }) })",
      'export default defineWorkflow({',
      "  name: 'agree',",
      '  run: async ({ agent, spawn }) => {',
      "    const draft = (await agent('draft', { attempts: 2 })).answer",
      '    const found = await spawn(helper, null)',
      '    return { ok: true, answer: `${draft}; ${JSON.stringify(found)}` }',
      '  },',
      '})',
    ].join('\n'),
  )
  // $3 in and $15 out per million: the failed turn costs $0.0045, the draft $0.003, the child's research $0.00675.
  await writeFile(
    join(dir, 'agree.fixtures.json'),
    JSON.stringify({
      rules: [
        {
          steps: [
            { fail: 'host-turn-timeout', usage: { inputTokens: 1000, outputTokens: 100 } },
            { text: 'a draft', usage: { inputTokens: 1000, outputTokens: 0 } },
            { text: 'found it', usage: { inputTokens: 1000, outputTokens: 250 } },
          ],
        },
      ],
    }),
  )
  await writeFile(join(dir, 'prices.json'), JSON.stringify({ models: { scripted: { input: '3', output: '15' } } }))
  return dir
}

const TOTAL = '0.014250'
const OVERHEAD = '0.004500'

interface ShowJson {
  cost: { usd: string; retryOverheadUsd: string; unpricedRequests: number }
  callCosts: { kind: string; id: string; name: string; usd: string; retryOverheadUsd: string; attempts: { attempt: number; status: string; usd?: string }[] }[]
}

describe('the cost of a run on every surface', () => {
  it('locus show, the README, GET /v1/runs/{id}, the inspector and locus report agree on the total and the retry overhead, the child run included', async () => {
    const dir = await agreementProject()
    const run = await runLocus(['run', 'agree.mts', '--runs-dir', 'runs', '--run-id', 'agree', '--prices', 'prices.json', '--quiet'], { cwd: dir })
    expect([run.code, run.stderr]).toEqual([0, ''])

    const shown = JSON.parse((await runLocus(['show', 'agree', '--runs-dir', 'runs', '--json'], { cwd: dir })).stdout) as ShowJson
    expect(shown.cost).toMatchObject({ usd: TOTAL, retryOverheadUsd: OVERHEAD, unpricedRequests: 0 })
    // Per call and per attempt: the retried draft, then the spawn with its child run's spend.
    expect(shown.callCosts.map((call) => [call.kind, call.name, call.usd, call.retryOverheadUsd, call.attempts.map((attempt) => [attempt.attempt, attempt.status, attempt.usd])])).toEqual([
      ['agent', 'default', '0.007500', '0.004500', [[1, 'failed', '0.004500'], [2, 'completed', '0.003000']]],
      ['child', 'helper', '0.006750', '0.000000', [[1, 'completed', '0.006750']]],
    ])
    const text = (await runLocus(['show', 'agree', '--runs-dir', 'runs'], { cwd: dir })).stdout
    expect(text).toContain('Cost per call:\n  agent default (call-1): $0.0075 ($0.0045 of it on retries)\n    attempt 1 call-1-a1 failed: $0.0045\n    attempt 2 call-1-a2 completed: $0.003\n  child helper (child-2): $0.00675\n')

    const readme = readFileSync(join(dir, 'runs', 'agree', 'outputs', 'README.md'), 'utf8')
    expect(readme).toContain(`- LLM requests: $${TOTAL} `)
    expect(readme).toContain(`- Retry overhead: $${OVERHEAD},`)

    const report = JSON.parse((await runLocus(['report', '--runs-dir', 'runs', '--json'], { cwd: dir })).stdout) as { cost: { usd: string; retryOverheadUsd: string } }
    expect([report.cost.usd, report.cost.retryOverheadUsd]).toEqual([TOTAL, OVERHEAD])

    const server = startLocus(['serve', '--workflows', join(dir, 'agree.mts'), '--runs-dir', 'runs', '--port', '0', '--model-host', 'none'], { cwd: dir })
    const ended = settle(server)
    try {
      const url = (await waitForOutput(server, /at (http:\/\/\S+)/))[1] ?? ''
      const body = (await (await fetch(`${url}/v1/runs/agree`)).json()) as { cost: { usd: string; retryOverheadUsd: string } | null }
      expect([body.cost?.usd, body.cost?.retryOverheadUsd]).toEqual([TOTAL, OVERHEAD])
      const page = await (await fetch(`${url}/runs/agree`)).text()
      const shownOnPage = /data-testid="cost">\$<span data-usd>([\d.]+)<\/span> for LLM requests, \$<span data-overhead>([\d.]+)<\/span>/.exec(page)
      expect([shownOnPage?.[1], shownOnPage?.[2]]).toEqual([TOTAL, OVERHEAD])
      // The spawn's own figure beside it.
      expect(page).toMatch(/<code>child-2<\/code> <span class="cost" data-testid="child-cost">\$0\.006750<\/span>/)
    } finally {
      server.kill('SIGTERM')
      await ended
    }
  })
})

describe('locus serve --prices --max-cost', () => {
  it('prices the runs it starts over HTTP and gives each the default money budget unless its body gives one', async () => {
    const dir = await tempDir()
    await writeFile(
      join(dir, 'fan-out.mts'),
      [
        `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
        'export default defineWorkflow({',
        "  name: 'fan-out',",
        '  run: async ({ agent, parallel }) => {',
        "    const thunks = ['a', 'b', 'c'].map((name) => () => agent(`look up ${name}`, { label: `lookup-${name}`, budgets: { maxOutputTokens: 1000 }, criticality: 'enriching' }))",
        '    return { ok: true, answers: (await parallel(thunks, { concurrency: 1 })).map((answer) => answer.answer) }',
        '  },',
        '})',
      ].join('\n'),
    )
    // Each look-up reserves about $0.008 and spends $0.00722 ($2 in, $8 out per million).
    await writeFile(join(dir, 'answers.json'), JSON.stringify({ rules: [{ steps: [{ text: 'found', usage: { inputTokens: 10, outputTokens: 900 } }] }] }))
    await writeFile(join(dir, 'prices.json'), JSON.stringify({ models: { scripted: { input: '2', output: '8' } } }))
    const server = startLocus(
      ['serve', '--workflows', join(dir, 'fan-out.mts'), '--runs-dir', 'runs', '--port', '0', '--model-host', 'scripted', '--fixtures', 'answers.json', '--prices', 'prices.json', '--max-cost', '0.009'],
      { cwd: dir },
    )
    const ended = settle(server)
    try {
      const url = (await waitForOutput(server, /at (http:\/\/\S+)/))[1] ?? ''
      const start = async (body: unknown): Promise<{ answerOutcome?: string; gaps?: unknown[] }> => {
        const started = (await (await fetch(`${url}/v1/workflows/fan-out/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()) as { runId: string }
        return (await (await fetch(`${url}/v1/runs/${started.runId}/result?wait=30`)).json()) as { answerOutcome?: string; gaps?: unknown[] }
      }
      // The server's $0.009 affords one look-up; a body's own budget (with only a deadline beside it) is kept over it.
      expect(await start({ budgets: { deadlineMs: 60_000 } })).toMatchObject({ answerOutcome: 'partial', gaps: [{ tool: 'lookup-b' }, { tool: 'lookup-c' }] })
      expect(await start({ budgets: { maxCostUsd: '1' } })).toMatchObject({ answerOutcome: 'complete', gaps: [] })
    } finally {
      server.kill('SIGTERM')
      await ended
    }
  })

  it('refuses --max-cost with --database-url, where the workers price the runs', async () => {
    const dir = await agreementProject()
    const refused = await runLocus(['serve', '--workflows', join(dir, 'agree.mts'), '--database-url', 'postgres://nobody@127.0.0.1:1/none', '--max-cost', '1'], { cwd: dir })
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('--max-cost has no effect with --database-url')
  })
})
