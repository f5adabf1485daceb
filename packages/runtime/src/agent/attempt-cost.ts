import { type LlmUsage, type UsdAmount, formatUsd, journalCost, zeroUsd } from '@locus/cost'
import type { AttemptCost, LineCost } from '@locus/journal'
import type { RunState } from '../run-state.js'

/** What an agent attempt's priced requests have cost so far. */
interface Spent {
  usd: UsdAmount
  unpriced: number
}

/** Per agent attempt (`callId`) of a run, what its requests cost until its terminal line is written. */
const spentByRun = new WeakMap<RunState, Map<string, Spent>>()

function spentOf(run: RunState): Map<string, Spent> {
  let spent = spentByRun.get(run)
  if (spent === undefined) {
    spent = new Map()
    spentByRun.set(run, spent)
  }
  return spent
}

/**
 * The `cost` of one `llm_attempt` line: its usage priced by the run's table,
 * added to what its agent attempt has spent. Undefined when the run is not
 * priced or the provider reported no usage (a request that failed before it
 * was answered).
 */
export function priceRequest(run: RunState, callId: string, model: string, usage: LlmUsage | undefined): LineCost | undefined {
  const prices = run.prices
  if (prices === undefined || usage === undefined) return undefined
  const cost = prices.cost({ model }, usage)
  const spent = spentOf(run)
  const attempt = spent.get(callId) ?? { usd: zeroUsd(), unpriced: 0 }
  if (cost.priced) attempt.usd = attempt.usd.add(cost.usd)
  else attempt.unpriced += 1
  spent.set(callId, attempt)
  return journalCost(cost)
}

/**
 * The `cost` of an agent attempt's terminal line, and the end of its
 * accounting: the sum of the requests its host reported, or, when the host
 * reported none (the scripted host, a worker), its own usage priced under the
 * role's model or else the host's name (`scripted`). Undefined when the run
 * is not priced or there is nothing to price.
 */
export function closeAttemptCost(run: RunState, callId: string, model: string, usage: LlmUsage | undefined): AttemptCost | undefined {
  const spent = spentOf(run)
  const attempt = spent.get(callId)
  spent.delete(callId)
  const prices = run.prices
  if (prices === undefined) return undefined
  if (attempt !== undefined) return { usd: formatUsd(attempt.usd), table: prices.version, ...(attempt.unpriced > 0 ? { unpriced: attempt.unpriced } : {}) }
  if (usage === undefined) return undefined
  const cost = prices.cost({ model }, usage)
  return cost.priced ? { usd: formatUsd(cost.usd), table: prices.version } : { usd: formatUsd(zeroUsd()), table: prices.version, unpriced: 1 }
}
