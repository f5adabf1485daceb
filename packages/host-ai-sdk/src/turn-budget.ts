import type { RetryClock } from '@locus/retry'
import type { CallBudgets, LaunchMode, SessionRequest } from '@locus/host-contract'

/**
 * How long one turn (one prompt of a child session, every LLM call and tool
 * call of it included) may take before the host aborts it as
 * `host-turn-timeout`. `null` leaves that bound off.
 */
export interface TurnBudget {
  /** Milliseconds from the start of the turn to its end, tool calls and retry waits included. */
  readonly totalMs: number | null
  /**
   * Milliseconds an LLM request may go without the server sending anything:
   * no headers, no streamed chunk. Waits between requests (retry backoff,
   * tool calls) do not count.
   */
  readonly idleMs: number | null
}

/** Either bound of a {@link TurnBudget}, given alone; the other keeps the value below it. */
export type TurnBudgetOverride = Partial<TurnBudget>

/**
 * The turn budget of each launch mode, used where nothing more specific was
 * given. Both idle bounds sit under Node's own 300 s headers and body
 * timeouts, so a frozen server ends as `host-turn-timeout` and never as
 * "Headers Timeout Error".
 *
 * | Launch mode | `idleMs` | `totalMs` |
 * | --- | --- | --- |
 * | `interactive` | 120 000 (2 min) | 900 000 (15 min) |
 * | `background` | 240 000 (4 min) | 3 600 000 (1 h) |
 */
export const TURN_BUDGET_DEFAULTS: Readonly<Record<LaunchMode, TurnBudget>> = Object.freeze({
  interactive: Object.freeze({ idleMs: 120_000, totalMs: 900_000 }),
  background: Object.freeze({ idleMs: 240_000, totalMs: 3_600_000 }),
})

/**
 * Call budgets as the host reads them: the runtime's, plus the two turn-budget
 * fields a call (or a run, through `budgets.perCall`) may set explicitly.
 */
export interface AiSdkCallBudgets extends CallBudgets {
  /** This call's {@link TurnBudget.totalMs}; `null` for none. */
  readonly turnTimeoutMs?: number | null
  /** This call's {@link TurnBudget.idleMs}; `null` for none. */
  readonly turnIdleMs?: number | null
}

/**
 * A session request as the host reads it. `launchMode` and the turn-budget
 * budgets are optional: a runtime that does not send them gets the host's
 * `launchMode` option (default `interactive`) and the host's own budgets.
 */
export interface AiSdkSessionRequest extends SessionRequest {
  /** The root run's launch mode; it selects the default turn budget. */
  readonly launchMode?: LaunchMode
  readonly budgets: AiSdkCallBudgets
}

/** Where a resolved turn-budget bound came from, most specific first. */
export type TurnBudgetSource = 'call' | 'host-agent' | 'host' | 'launch-mode'

/** A resolved turn budget with where each bound came from. */
export interface ResolvedTurnBudget extends TurnBudget {
  readonly launchMode: LaunchMode
  readonly sources: { readonly totalMs: TurnBudgetSource; readonly idleMs: TurnBudgetSource }
}

/**
 * Lays the layers over each other, bound by bound: the call's explicit
 * `budgets.turnTimeoutMs` / `turnIdleMs`, then the host's `agents[role].turnBudget`,
 * then the host's `turnBudget`, then {@link TURN_BUDGET_DEFAULTS} of the
 * launch mode (the request's, else the host's `launchMode`, else `interactive`).
 */
export function resolveTurnBudget(
  layers: { readonly host?: TurnBudgetOverride | undefined; readonly agent?: TurnBudgetOverride | undefined; readonly launchMode?: LaunchMode | undefined },
  request: Pick<AiSdkSessionRequest, 'budgets' | 'launchMode'>,
): ResolvedTurnBudget {
  const launchMode = request.launchMode ?? layers.launchMode ?? 'interactive'
  const base = TURN_BUDGET_DEFAULTS[launchMode]
  const pick = (call: number | null | undefined, key: keyof TurnBudget): { value: number | null; source: TurnBudgetSource } => {
    if (call !== undefined) return { value: call, source: 'call' }
    const agent = layers.agent?.[key]
    if (agent !== undefined) return { value: agent, source: 'host-agent' }
    const host = layers.host?.[key]
    if (host !== undefined) return { value: host, source: 'host' }
    return { value: base[key], source: 'launch-mode' }
  }
  const total = pick(request.budgets.turnTimeoutMs, 'totalMs')
  const idle = pick(request.budgets.turnIdleMs, 'idleMs')
  return { launchMode, totalMs: total.value, idleMs: idle.value, sources: { totalMs: total.source, idleMs: idle.source } }
}

/** Which bound of the turn budget ended a turn. */
export type TurnBudgetBound = 'idle' | 'total'

/** The idle watch of one LLM request: see {@link TurnBudgetWatch.startRequest}. */
export interface RequestWatch {
  /** The server sent something: the idle clock starts again. */
  touch(): void
  /** The request is over; its idle watch stops. Safe to call twice, and late. */
  end(): void
}

const NO_WATCH: RequestWatch = Object.freeze({ touch: () => undefined, end: () => undefined })

/**
 * Watches a turn's total time, and the idle time of each LLM request in it,
 * on an injected clock. When a bound expires it records which one and calls
 * `onExpire`, which aborts the turn; the session then ends the turn as
 * `host-turn-timeout`.
 *
 * The idle watch costs one timer per idle period, not one per streamed chunk:
 * `touch()` only stamps the time, and the timer, when it wakes, sleeps again
 * for whatever is left.
 */
export class TurnBudgetWatch {
  readonly #clock: RetryClock
  readonly #budget: TurnBudget
  readonly #onExpire: () => void
  readonly #stop = new AbortController()
  readonly #requests = new Set<AbortController>()
  #expired: TurnBudgetBound | undefined

  constructor(clock: RetryClock, budget: TurnBudget, onExpire: () => void) {
    this.#clock = clock
    this.#budget = budget
    this.#onExpire = onExpire
    if (budget.totalMs !== null) {
      const stop = this.#stop.signal
      clock.sleep(budget.totalMs, stop).then(
        () => {
          if (!stop.aborted) this.#expire('total')
        },
        () => undefined,
      )
    }
  }

  /** The bound that expired, if one did. */
  get expired(): TurnBudgetBound | undefined {
    return this.#expired
  }

  /**
   * Starts the idle watch of one LLM request. Each request gets its own, so an
   * attempt abandoned at its deadline that settles late cannot end the watch
   * of the attempt after it.
   */
  startRequest(): RequestWatch {
    const idleMs = this.#budget.idleMs
    if (idleMs === null || this.#expired !== undefined || this.#stop.signal.aborted) return NO_WATCH
    const clock = this.#clock
    const controller = new AbortController()
    this.#requests.add(controller)
    const turnStop = this.#stop.signal
    let lastActivity = clock.now()
    const watch = async (): Promise<void> => {
      let wait = idleMs
      for (;;) {
        await clock.sleep(wait, controller.signal)
        if (controller.signal.aborted || turnStop.aborted) return
        const quiet = clock.now() - lastActivity
        if (quiet >= idleMs) {
          this.#expire('idle')
          return
        }
        wait = idleMs - quiet
      }
    }
    watch().catch(() => undefined)
    return {
      touch: () => {
        lastActivity = clock.now()
      },
      end: () => {
        controller.abort()
        this.#requests.delete(controller)
      },
    }
  }

  /** Ends every watch; the turn is over. */
  stop(): void {
    this.#stop.abort()
    for (const request of this.#requests) request.abort()
    this.#requests.clear()
  }

  /** Words for the reason of a `host-turn-timeout`. */
  describe(bound: TurnBudgetBound): string {
    return bound === 'idle'
      ? `the host's turn budget expired: ${this.#budget.idleMs ?? 0} ms passed without a byte from the server (its idle bound), and the child was aborted`
      : `the host's turn budget expired: the turn ran longer than ${this.#budget.totalMs ?? 0} ms (its total bound), and the child was aborted`
  }

  #expire(bound: TurnBudgetBound): void {
    if (this.#expired !== undefined || this.#stop.signal.aborted) return
    this.#expired = bound
    this.stop()
    this.#onExpire()
  }
}
