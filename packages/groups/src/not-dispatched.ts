/**
 * How a branch says it never dispatched its work: the error it ends with
 * carries `notDispatchedReason`, one sentence saying why (a call whose worst
 * case its money budget could not cover: `the run's cost budget of $2.50 was
 * spent`). The group then reports the position as `not-dispatched` with that
 * reason instead of `failed`. Read by shape, so any package may set it.
 */
export interface NotDispatchedMark {
  readonly notDispatchedReason: string
}

/** The reason a thrown value carries for a position that was not dispatched, or undefined. */
export function notDispatchedReasonOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined
  const reason = (error as { notDispatchedReason?: unknown }).notDispatchedReason
  return typeof reason === 'string' && reason !== '' ? reason : undefined
}
