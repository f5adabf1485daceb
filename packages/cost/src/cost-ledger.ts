import { type UsdAmount, Usd, displayUsd, zeroUsd } from './usd.js'

/** Money held back for one attempt until it settles. */
export interface CostReservation {
  readonly worstCase: UsdAmount
}

/** A reservation as its ledger keeps it: which ledger made it, whether it is still open, and the one held in the parent. */
interface OpenReservation extends CostReservation {
  readonly owner: CostLedger
  open: boolean
  readonly parent: CostReservation | undefined
}

/** Why an attempt was not given its reservation. */
export interface CostRefusal {
  /** The budget that did not cover it (the tightest one, for a call inside a run). */
  readonly limit: UsdAmount
  /** What was left of that budget: its limit less what was spent and what is held. */
  readonly remaining: UsdAmount
  /** What the attempt would have needed. */
  readonly needed: UsdAmount
  /** Which budget: `run` for the run tree's, `call` for one call's own. */
  readonly scope: 'run' | 'call'
  /** One sentence for a gap or a journal line: `the run's cost budget of $2.50 was spent`. */
  readonly reason: string
}

/** Options of {@link createCostLedger}. */
export interface CostLedgerOptions {
  /** The most this ledger may spend; no limit when unset (it still counts). */
  readonly limit?: UsdAmount | undefined
  /** What was spent before (restored from the journal on resume). */
  readonly spent?: UsdAmount | undefined
  /** A ledger every reservation is also made in (a call's ledger inside its run's). */
  readonly parent?: CostLedger | undefined
  /** What the limit belongs to, for refusals. @default 'run' */
  readonly scope?: 'run' | 'call' | undefined
}

/**
 * Counts money for a run tree or one call: what was spent, what is held for
 * attempts in flight, and whether a new attempt's worst case still fits.
 * `reserve` is synchronous, so attempts started together (a `parallel()` of a
 * hundred calls) take their reservations one after another and the limit is
 * never overshot by what was reserved.
 */
export interface CostLedger {
  readonly limit: UsdAmount | undefined
  readonly scope: 'run' | 'call'
  /** Money settled so far. */
  spent(): UsdAmount
  /** Money held for attempts not yet settled. */
  reserved(): UsdAmount
  /** The limit less what was spent and held; undefined without a limit. */
  remaining(): UsdAmount | undefined
  /** Holds `worstCase` here and in every parent, or says which budget it did not fit. */
  reserve(worstCase: UsdAmount): { readonly ok: true; readonly reservation: CostReservation } | { readonly ok: false; readonly refusal: CostRefusal }
  /** Ends a reservation with what the attempt really cost (which may exceed its worst case if the provider overshot). */
  settle(reservation: CostReservation, actual: UsdAmount): void
  /** Ends a reservation that spent nothing (the attempt was never sent). */
  release(reservation: CostReservation): void
  /** Counts money spent outside any reservation (an attempt that could not be bounded, or one replayed from the journal). */
  record(actual: UsdAmount): void
  /** The refusal `amount` would meet now, or undefined when it fits every budget. */
  refusalFor(amount: UsdAmount): CostRefusal | undefined
}

function refusalSentence(scope: 'run' | 'call', limit: UsdAmount): string {
  return scope === 'run' ? `the run's cost budget of ${displayUsd(limit)} was spent` : `the call's cost budget of ${displayUsd(limit)} was spent`
}

/** A {@link CostLedger}. */
export function createCostLedger(options: CostLedgerOptions = {}): CostLedger {
  const limit = options.limit
  const scope = options.scope ?? 'run'
  const parent = options.parent
  let spent: UsdAmount = options.spent ?? zeroUsd()
  let reserved: UsdAmount = zeroUsd()

  /** The reservation as this ledger made it, while it is open; undefined for another ledger's or one already ended. */
  const ownOpen = (reservation: CostReservation): OpenReservation | undefined => {
    const candidate = reservation as Partial<OpenReservation>
    return candidate.owner === ledger && candidate.open === true ? (reservation as OpenReservation) : undefined
  }

  const ownRefusal = (amount: UsdAmount): CostRefusal | undefined => {
    if (limit === undefined) return undefined
    // The common case (it fits) costs two additions and a comparison; the refusal is built only when needed.
    if (spent.add(reserved).add(amount).lte(limit)) return undefined
    const remaining = Usd.max(zeroUsd(), limit.sub(spent).sub(reserved))
    return { limit, remaining, needed: amount, scope, reason: refusalSentence(scope, limit) }
  }

  const ledger: CostLedger = {
    limit,
    scope,
    spent: () => spent,
    reserved: () => reserved,
    remaining: () => (limit === undefined ? undefined : Usd.max(zeroUsd(), limit.sub(spent).sub(reserved))),
    refusalFor(amount) {
      return ownRefusal(amount) ?? parent?.refusalFor(amount)
    },
    reserve(worstCase) {
      const refusal = ledger.refusalFor(worstCase)
      if (refusal !== undefined) return { ok: false, refusal }
      let held: CostReservation | undefined
      if (parent !== undefined) {
        const inParent = parent.reserve(worstCase)
        // refusalFor checked every parent first, so this cannot be refused.
        if (!inParent.ok) return inParent
        held = inParent.reservation
      }
      // Its state lives on the reservation itself: a WeakSet or WeakMap per ledger cost the garbage collector dearly on wide fan-outs.
      const reservation: OpenReservation = { worstCase, owner: ledger, open: true, parent: held }
      reserved = reserved.add(worstCase)
      return { ok: true, reservation }
    },
    settle(reservation, actual) {
      const own = ownOpen(reservation)
      if (own === undefined) return
      own.open = false
      reserved = reserved.sub(own.worstCase)
      spent = spent.add(actual)
      if (own.parent !== undefined) parent?.settle(own.parent, actual)
    },
    release(reservation) {
      const own = ownOpen(reservation)
      if (own === undefined) return
      own.open = false
      reserved = reserved.sub(own.worstCase)
      if (own.parent !== undefined) parent?.release(own.parent)
    },
    record(actual) {
      spent = spent.add(actual)
      parent?.record(actual)
    },
  }
  return ledger
}
