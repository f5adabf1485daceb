import type { RateGate, SessionRequest, TurnResult } from '../host.js'
import type { RateTicket } from '../rate-limits.js'
import type { RunState } from '../run-state.js'
import { modelOfRole } from '../run-money.js'

/** The room a turn was given: settled once the turn answers. */
export interface RateRoom {
  /** Handed to the host: room for the turn's later requests, and a provider's `Retry-After` at once. */
  readonly gate: RateGate | undefined
  /** Settles the turn's token charge to its real usage, and closes the shared limits for a provider's `Retry-After` the host did not report through the gate. */
  settle(turn: Pick<TurnResult, 'usage' | 'llmAttempts'>): void
}

/**
 * The provider of a role's requests: the host's `settings.provider` or
 * `settings.providerName`, else its `settings.api` unless `openai-compatible`,
 * else the model id's part before `/`, else the host's name.
 */
function providerOf(run: RunState, model: string): string {
  const settings = run.host?.settings as { readonly provider?: unknown; readonly providerName?: unknown; readonly api?: unknown } | undefined
  for (const named of [settings?.provider, settings?.providerName, settings?.api === 'openai-compatible' ? undefined : settings?.api]) {
    if (typeof named === 'string' && named.length > 0) return named
  }
  const slash = model.indexOf('/')
  if (slash > 0) return model.slice(0, slash)
  return run.host?.name ?? 'unknown'
}

/**
 * Waits for room in the run's shared rate limits before one turn of an agent
 * attempt is sent, charging its worst case in tokens (every character sent in
 * the session so far, as a token each, plus the call's `maxOutputTokens`). A
 * wait is journaled as `rate_wait { limit, waitedMs, callId }`; it charges no
 * attempt, retry or invocation. Resolves undefined when `signal` aborted the
 * wait (the attempt's fuse or the run's cancellation). The room's `gate` goes
 * to the host, which asks it before each later request of the turn (a retry,
 * a later step), each charged and journaled the same way, and through which
 * it reports a provider's `Retry-After` as soon as it is answered.
 */
export async function waitForRate(run: RunState, request: SessionRequest, turn: { readonly inputChars: number; readonly signal: AbortSignal }): Promise<RateRoom | undefined> {
  const limiter = run.rateLimiter
  if (limiter === undefined) return { gate: undefined, settle: () => undefined }
  // A host that resolves a request's model says best (the AI SDK host's resolveModelId); else the role's.
  const resolve = (run.host as { resolveModelId?: (request: SessionRequest) => unknown } | undefined)?.resolveModelId
  const resolved = resolve === undefined ? undefined : resolve(request)
  const model = typeof resolved === 'string' && resolved.length > 0 ? resolved : modelOfRole(run.workflow, run.host, request.agent)
  const target = { provider: providerOf(run, model), model }
  const tokens = turn.inputChars + (request.budgets.maxOutputTokens ?? 0)
  /** One request's room, its wait journaled; undefined when `signal` aborted the wait. */
  const acquire = async (signal: AbortSignal): Promise<RateTicket | undefined> => {
    let ticket
    try {
      ticket = await limiter.acquire({ ...target, tokens, signal })
    } catch (error) {
      if (signal.aborted) return undefined
      throw error
    }
    if (ticket.wait !== undefined) run.emit({ type: 'rate_wait', limit: ticket.wait.limit, waitedMs: ticket.wait.waitedMs, callId: request.callId })
    return ticket
  }
  const first = await acquire(turn.signal)
  if (first === undefined) return undefined
  // Every later request of the turn (a retry, a later step) charges its worst case too; the turn's real usage settles on the first.
  const later: RateTicket[] = []
  /** Retry-After closings the host reported as they happened, by model: not closed again at settle. */
  const reported = new Set<string>()
  const gate: RateGate = {
    async beforeRequest(signal) {
      const ticket = await acquire(signal)
      if (ticket !== undefined) later.push(ticket)
    },
    retryAfter(retryModel, ms) {
      reported.add(retryModel)
      void limiter.retryAfter({ provider: target.provider, model: retryModel }, ms)
    },
  }
  return {
    gate,
    settle(result) {
      // Settled even without usage (the worst case then stands): a settled request counts from its answer.
      first.settle(result.usage === undefined ? tokens : result.usage.inputTokens + result.usage.outputTokens)
      for (const ticket of later) ticket.settle(0)
      for (const attempt of result.llmAttempts ?? []) {
        // A provider's 429 with Retry-After closes the limit for every call sharing it, not only this one.
        if (attempt.retryAfterMs !== undefined && (attempt.status === 429 || attempt.code === 'rate_limited') && !reported.has(attempt.model)) {
          void limiter.retryAfter({ provider: target.provider, model: attempt.model }, attempt.retryAfterMs)
        }
      }
    },
  }
}
