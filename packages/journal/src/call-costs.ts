import type { AgentCallView, ChildCallView, RunView } from './run-view.js'
import { addUsd } from './usd-sum.js'

const ZERO_USD = '0.000000'

/** What one attempt of a call cost, as {@link callCosts} lists it. */
export interface AttemptCostEntry {
  readonly attempt: number
  /** The agent attempt's `callId`, or the spawn attempt's child execution. */
  readonly id: string
  readonly status: string
  /** Dollars, exact; `undefined` when nothing of it was priced (it never ended, or its run was not priced). */
  readonly usd: string | undefined
  /** Requests of it whose model had no price: their cost is not in `usd`. */
  readonly unpricedRequests: number
  /** True when the answer came from the journal (a resume or replay): it cost nothing now. */
  readonly replayed: boolean
}

/** What one logical call cost, its attempts added up, as {@link callCosts} lists it. */
export interface CallCostEntry {
  /** `agent` for an `agent()` call, `child` for a `spawn()` (its child runs, their own calls included). */
  readonly kind: 'agent' | 'child'
  /** The call's `logicalCallId`, or the spawn's `childCallId`. */
  readonly id: string
  /** The agent's name, or the child workflow's. */
  readonly name: string
  readonly usd: string
  /** Of `usd`, what attempts that were retried cost (and, for a spawn, its child runs' own retries). */
  readonly retryOverheadUsd: string
  readonly unpricedRequests: number
  /** Every attempt, in the order they started. */
  readonly attempts: readonly AttemptCostEntry[]
}

function agentEntry(call: AgentCallView): CallCostEntry {
  let usd = ZERO_USD
  let overhead = ZERO_USD
  let unpriced = 0
  const attempts = call.attempts.map((attempt, index): AttemptCostEntry => {
    const end = attempt.end
    const replayed = end?.replayed === true
    const cost = replayed ? undefined : end?.cost
    if (cost !== undefined) {
      usd = addUsd(usd, cost.usd)
      // Every attempt but the last was thrown away for a retry.
      if (index < call.attempts.length - 1) overhead = addUsd(overhead, cost.usd)
      unpriced += cost.unpriced ?? 0
    }
    return { attempt: attempt.attempt, id: attempt.callId, status: attempt.status, usd: cost?.usd, unpricedRequests: cost?.unpriced ?? 0, replayed }
  })
  return { kind: 'agent', id: call.id, name: call.name, usd, retryOverheadUsd: overhead, unpricedRequests: unpriced, attempts }
}

function childEntry(call: ChildCallView): CallCostEntry {
  const attempts = call.attempts.map((attempt): AttemptCostEntry => {
    const replayed = attempt.end?.replayed === true
    const cost = replayed ? undefined : attempt.end?.cost
    return { attempt: attempt.attempt, id: attempt.childExecutionId, status: attempt.status, usd: cost?.usd, unpricedRequests: cost?.unpriced ?? 0, replayed }
  })
  const cost = call.cost
  return {
    kind: 'child',
    id: call.id,
    name: call.workflow,
    usd: cost?.usd ?? ZERO_USD,
    retryOverheadUsd: cost?.retryOverheadUsd ?? ZERO_USD,
    unpricedRequests: cost?.unpricedRequests ?? 0,
    attempts,
  }
}

/**
 * What each logical call of a priced run cost, from its run view: every
 * `agent()` call (its attempts' `agent_end.cost`) and every `spawn()` (its
 * child runs' `child_end.cost`), agent calls in the order they started and then spawns in
 * the order spawned, with the attempts of each. A call nothing of which was priced is left out. The
 * view should keep every call (`createRunView({ keep: 'all' })`): a
 * `notable` view has forgotten the calls that completed at once.
 *
 * @example
 * ```ts
 * for (const call of callCosts(view)) console.log(call.name, call.usd)
 * ```
 */
export function callCosts(view: RunView): CallCostEntry[] {
  // Agent calls in the order they started, then spawns in the order spawned (seq numbers restart in each execution, so they cannot merge the two).
  const agents = view
    .calls()
    .filter((call): call is AgentCallView => call.kind === 'agent')
    .map(agentEntry)
  return [...agents, ...view.children().map(childEntry)].filter((entry) => entry.attempts.some((attempt) => attempt.usd !== undefined))
}
