// Priced runs of every answer outcome, recorded in the outcome store, for `locus report` and the inspector's /report page (issue #32).
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { expect } from 'vitest'
import { jsonLines, repoRoot, runLocus, tempDir } from './helpers.js'

const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')

/** What `locus show --json` says a run cost: its RunView's cost. */
export interface ShownCost {
  readonly usd: string
  readonly retryOverheadUsd: string
  readonly unpricedRequests: number
}

/** A run made by {@link recordPricedRuns}: its answer outcome and what `locus show` says it cost. */
export interface PricedRun {
  readonly runId: string
  readonly outcome: 'complete' | 'partial' | 'cannot_answer' | 'failed'
  readonly cost: ShownCost
}

/**
 * A project whose workflow answers by `input.kind`: complete, partial (an
 * enriching gap), cannot_answer (a required gap of get_payment_history) or
 * failed (it throws), after two priced agent calls; `cheap.json` answers
 * with fewer tokens.
 */
export async function pricedProject(): Promise<string> {
  const dir = await tempDir()
  const gap = (criticality: string) => `{ tool: 'get_payment_history', criticality: '${criticality}', reason: 'the finance system timed out' }`
  await writeFile(
    join(dir, 'answer.mts'),
    [
      `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
      'export default defineWorkflow({',
      "  name: 'answer',",
      '  run: async ({ agent, input }) => {',
      "    await agent('draft')",
      "    const summary = await agent('summarise')",
      '    const kind = (input as { kind: string }).kind',
      "    if (kind === 'complete') return { ok: true, answer: summary.answer }",
      `    if (kind === 'partial') return { ok: false, text: 'Net 45.', found: true, partial: true, caveats: ['Could not check the payment history.'], gaps: [${gap('enriching')}], gathered: [] }`,
      `    if (kind === 'cannot') return { ok: false, text: 'Cannot say.', found: false, partial: false, caveats: ['The payment history is required.'], gaps: [${gap('required')}], gathered: [] }`,
      "    throw new Error('the workflow gave up')",
      '  },',
      '})',
    ].join('\n'),
  )
  const steps = (tokens: number) => [
    { text: 'a long draft', usage: { inputTokens: tokens, outputTokens: 7 } },
    { text: 'a summary', usage: { inputTokens: tokens, outputTokens: 250 } },
  ]
  await writeFile(join(dir, 'answer.fixtures.json'), JSON.stringify({ rules: [{ steps: steps(1000) }] }))
  await writeFile(join(dir, 'cheap.json'), JSON.stringify({ rules: [{ steps: steps(3) }] }))
  await writeFile(join(dir, 'prices.json'), JSON.stringify({ models: { scripted: { input: '3', output: '15' } } }))
  return dir
}

/** Runs the priced workflow once per outcome (and the cheap fixtures for some), and reads each run's cost back with `locus show --json`. */
export async function recordPricedRuns(dir: string, env: Record<string, string> = {}): Promise<PricedRun[]> {
  const plan: { kind: string; outcome: PricedRun['outcome']; cheap: boolean }[] = [
    { kind: 'complete', outcome: 'complete', cheap: false },
    { kind: 'complete', outcome: 'complete', cheap: true },
    { kind: 'partial', outcome: 'partial', cheap: false },
    { kind: 'cannot', outcome: 'cannot_answer', cheap: true },
    { kind: 'throw', outcome: 'failed', cheap: false },
  ]
  const runs: PricedRun[] = []
  for (const [index, step] of plan.entries()) {
    const runId = `r${index}-${step.kind}`
    const args = ['run', 'answer.mts', '--runs-dir', 'runs', '--run-id', runId, '--prices', 'prices.json', '--input', JSON.stringify({ kind: step.kind }), '--quiet', ...(step.cheap ? ['--fixtures', 'cheap.json'] : [])]
    const run = await runLocus(args, { cwd: dir, env })
    expect(run.stderr).toBe('')
    const shown = await runLocus(['show', runId, '--runs-dir', 'runs', '--json'], { cwd: dir, env })
    const summary = jsonLines(shown.stdout).at(-1) as { answerOutcome?: string; cost?: ShownCost }
    if (summary.answerOutcome !== step.outcome) throw new Error(`run ${runId} answered ${String(summary.answerOutcome)}, not ${step.outcome}: ${run.stdout}${shown.stdout}`)
    if (summary.cost === undefined) throw new Error(`run ${runId} has no cost: ${shown.stdout}`)
    runs.push({ runId, outcome: step.outcome, cost: summary.cost })
  }
  return runs
}

/** Adds decimal strings exactly, as integers of their smallest place; the sum in the report's canonical form (six places at least). */
export function sumUsd(amounts: readonly string[]): string {
  const places = Math.max(6, ...amounts.map((amount) => amount.split('.')[1]?.length ?? 0))
  const total = amounts.reduce((sum, amount) => {
    const [whole = '0', fraction = ''] = amount.split('.')
    return sum + BigInt(whole + fraction.padEnd(places, '0'))
  }, 0n)
  const digits = total.toString().padStart(places + 1, '0')
  return `${digits.slice(0, -places)}.${digits.slice(-places).replace(/0+$/, '').padEnd(6, '0')}`
}
