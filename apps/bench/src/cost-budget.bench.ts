// What pricing and the money budget add to a run (issue #32): the cost of
// pricing one LLM attempt and of reserving and settling it in the ledger, in
// microseconds, and a 1,000-call fan-out with a money budget against the same
// run without one, as ratios measured in one process run.
//
//   pnpm --filter @locus/bench bench:cost
import { performance } from 'node:perf_hooks'
import { boundPromptTokens, createCostLedger, createPriceTable, journalCost, parsePriceFile } from '@locus/cost'
import { createRuntime, createScriptedHost, defineWorkflow } from '@locus/runtime'
import { createMemoryRunStore } from '@locus/store'

const prices = createPriceTable({ prices: parsePriceFile({ models: { scripted: { input: '3', output: '15', cacheRead: '0.3', cacheWrite: '3.75' } } }) })
const usage = { inputTokens: 1200, outputTokens: 350, cacheReadTokens: 800 }
const prompt = 'Summarise the ticket history of account 4711 and say whether a refund is due.'

/** Microseconds per iteration of `body`, the best of five rounds of `iterations`. */
function microsPer(iterations: number, body: () => void): number {
  let best = Number.POSITIVE_INFINITY
  for (let round = 0; round < 5; round += 1) {
    const started = performance.now()
    for (let index = 0; index < iterations; index += 1) body()
    best = Math.min(best, ((performance.now() - started) * 1000) / iterations)
  }
  return best
}

const pricingMicros = microsPer(100_000, () => {
  journalCost(prices.cost({ model: 'scripted' }, usage))
})
const runLedger = createCostLedger({ limit: prices.worstCase({ model: 'scripted' }, { promptTokens: 1, maxOutputTokens: 1 })?.mul(1e12) })
const ledgerMicros = microsPer(100_000, () => {
  const worst = prices.worstCase({ model: 'scripted' }, { promptTokens: boundPromptTokens([prompt]), maxOutputTokens: 8000 })
  if (worst === undefined) throw new Error('scripted has a price')
  const held = runLedger.reserve(worst)
  if (!held.ok) throw new Error('the bench budget is large enough')
  const cost = prices.cost({ model: 'scripted' }, usage)
  runLedger.settle(held.reservation, cost.priced ? cost.usd : worst)
})

const CALLS = 1000
const workflow = defineWorkflow({
  name: 'fan-out-1000',
  run: async ({ agent, parallel }) => {
    const answers = await parallel(Array.from({ length: CALLS }, (_, index) => () => agent(`${prompt} #${index}`)))
    return { ok: true, calls: answers.length }
  },
})

async function fanOutMs(withBudget: boolean): Promise<number> {
  const host = createScriptedHost({ rules: [{ steps: [{ text: 'done', usage: { inputTokens: 40, outputTokens: 12 } }] }] })
  const runtime = createRuntime({
    workflows: [workflow],
    store: createMemoryRunStore(),
    host,
    defaults: { prices, durability: 'none', ...(withBudget ? { budgets: { maxCostUsd: '1000' } } : {}) },
  })
  const started = performance.now()
  const handle = await runtime.start(workflow)
  const done = await handle.done
  const elapsed = performance.now() - started
  if (done.disposition !== 'completed') throw new Error(`the fan-out ended ${done.disposition}: ${JSON.stringify(done.error)}`)
  return elapsed
}

// The fastest round of each: on a shared machine, interference only ever adds time. The median is printed beside it.
const fastest = (values: number[]): number => Math.min(...values)
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN

// Warm up both paths, then alternate so drift on a shared machine falls on both alike.
await fanOutMs(false)
await fanOutMs(true)
const ROUNDS = 25
const without: number[] = []
const withBudget: number[] = []
for (let round = 0; round < ROUNDS; round += 1) {
  without.push(await fanOutMs(false))
  withBudget.push(await fanOutMs(true))
}
const plain = fastest(without)
const budgeted = fastest(withBudget)

console.log(`pricing one LLM attempt (cost + journal form): ${pricingMicros.toFixed(2)} µs`)
console.log(`pricing and money budget together per attempt (prompt bound, worst case, reserve, price the usage, settle): ${ledgerMicros.toFixed(2)} µs`)
console.log(`1,000-call fan-out, priced, no budget: ${plain.toFixed(1)} ms fastest, ${median(without).toFixed(1)} ms median (${ROUNDS} rounds, alternated)`)
console.log(`1,000-call fan-out, priced, maxCostUsd: ${budgeted.toFixed(1)} ms fastest, ${median(withBudget).toFixed(1)} ms median`)
console.log(`ratio with budget / without: ${(budgeted / plain).toFixed(3)} fastest, ${(median(withBudget) / median(without)).toFixed(3)} median`)
