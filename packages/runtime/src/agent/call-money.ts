import { type CostLedger, type CostRefusal, type CostReservation, type UsdAmount, Usd, boundPromptTokens, createCostLedger, formatUsd, parseUsd } from '@locus/cost'
import type { RetryRefused } from '@locus/journal'
import type { AgentCallOptions } from '../define.js'
import { RuntimeInputError } from '../errors.js'
import type { CountedBudgets } from '../host.js'
import type { RunState } from '../run-state.js'
import { modelOfRole } from '../run-money.js'

/**
 * The money side of one live `agent()` call: the ledger its attempts reserve
 * in (its own under the run's, when it has `budgets.maxCostUsd`), the worst
 * case of one attempt, and the reservation of the attempt about to run.
 */
export interface CallMoney {
  readonly ledger: CostLedger
  /** What one attempt may cost at most; undefined when the model is unpriced (a run that allowed it), which reserves nothing. */
  readonly worstCase: UsdAmount | undefined
  /** The reservation of the attempt about to run or running; settled when its terminal line is written. */
  reservation: CostReservation | undefined
}

/**
 * Opens a call's money: undefined when neither the run nor the call has a
 * money budget (nothing is reserved, spending is still priced). One attempt's
 * worst case is its prompt bounded from its text (and the clarification turn a
 * `choice` call may send) at the dearest input price, plus `maxOutputTokens`
 * per turn at the dearest output price.
 *
 * @throws {RuntimeInputError} a call budget on a run without prices.
 */
export function openCallMoney(run: RunState, call: { readonly prompt: string; readonly options: AgentCallOptions; readonly agent: string; readonly budgets: CountedBudgets }): CallMoney | undefined {
  const callLimit = call.options.budgets?.maxCostUsd
  if (run.costLedger === undefined && callLimit === undefined) return undefined
  const prices = run.prices
  if (prices === undefined) {
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', 'agent() budgets.maxCostUsd needs prices: give the run a price table (the `prices` option, or --prices / --max-cost on the CLI)', [
      'budgets.maxCostUsd: the run has no prices',
    ])
  }
  const ledger = callLimit === undefined ? (run.costLedger as CostLedger) : createCostLedger({ limit: parseUsd(callLimit, 'budgets.maxCostUsd', { positive: true }), parent: run.costLedger, scope: 'call' })
  const turns = call.options.choice === undefined ? 1 : 2
  const perTurn = prices.worstCase({ model: modelOfRole(run.workflow, run.host, call.agent) }, { promptTokens: boundPromptTokens([call.prompt]), maxOutputTokens: call.budgets.maxOutputTokens })
  return { ledger, worstCase: perTurn?.mul(turns), reservation: undefined }
}

/** Reserves the next attempt's worst case; the refusal when it does not fit. An unpriced attempt reserves nothing and is never refused. */
export function reserveAttempt(money: CallMoney): CostRefusal | undefined {
  if (money.worstCase === undefined) return undefined
  const held = money.ledger.reserve(money.worstCase)
  if (!held.ok) return held.refusal
  money.reservation = held.reservation
  return undefined
}

/** Ends the running attempt's reservation with what it cost (`usd` as journaled), or with nothing when it reported no price. */
export function settleAttempt(money: CallMoney | undefined, usd: string | undefined): void {
  if (money === undefined) return
  const actual = usd === undefined ? new Usd(0) : new Usd(usd)
  const reservation = money.reservation
  money.reservation = undefined
  if (reservation === undefined) money.ledger.record(actual)
  else money.ledger.settle(reservation, actual)
}

/** A money refusal as `retryRefused.costBudget` journals it. */
export function journalRefusal(refusal: CostRefusal): NonNullable<RetryRefused['costBudget']> {
  return { scope: refusal.scope, limitUsd: formatUsd(refusal.limit), remainingUsd: formatUsd(refusal.remaining), neededUsd: formatUsd(refusal.needed) }
}
