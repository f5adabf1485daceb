import type { ReplaySession } from '@locus/replay'

/**
 * Thrown into a call that a check-only replay would have run live (it
 * diverged, or it lies past the end of the recording): the call is refused
 * before any host, tool, worker or child workflow is reached. Internal to the
 * deploy check; never leaves the runtime.
 */
export class LiveCallRefusedError extends Error {
  override readonly name = 'LiveCallRefusedError'

  constructor(
    readonly ordinal: string,
    readonly reason: string,
  ) {
    super(`the deploy check runs nothing live: the call at ${ordinal} would run live (${reason})`)
  }
}

/**
 * Wraps a replay session so that every call it would run live throws
 * {@link LiveCallRefusedError} instead, after the session has recorded its
 * decision (so the report still names it). A check-only replay therefore
 * never calls a host, runs a tool, waits on a deferral or spawns a child.
 */
export function refuseLiveCalls(session: ReplaySession): ReplaySession {
  const next = ((call: Parameters<ReplaySession['next']>[0]) => {
    const decision = session.next(call)
    if (decision.mode === 'live') throw new LiveCallRefusedError(call.ordinal, decision.reason)
    return decision
  }) as ReplaySession['next']
  return {
    next,
    get divergence() {
      return session.divergence
    },
    get latched() {
      return session.latched
    },
    report: () => session.report(),
  }
}
