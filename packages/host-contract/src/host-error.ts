import { type FailureCause, LocusError, hasLocusErrorCode, isFailureCause } from '@locus/outcome'

/** The stable codes of this package's errors. */
export const HOST_CONTRACT_ERROR_CODES = ['HOST_ERROR'] as const

/**
 * A host failure with a machine-readable cause. Hosts throw it when a turn
 * cannot produce an answer at all (for example `sdk-unavailable` or
 * `host-turn-timeout`); anything else a host throws reads as `unclassified`.
 */
export class HostError extends LocusError {
  declare readonly code: 'HOST_ERROR'
  readonly failureCause: FailureCause

  constructor(failureCause: FailureCause, message: string, cause?: unknown) {
    super(message, { code: 'HOST_ERROR', cause })
    this.name = 'HostError'
    this.failureCause = failureCause
  }

  static override isInstance(value: unknown): value is HostError {
    return hasLocusErrorCode(value, 'HOST_ERROR')
  }
}

/** The failure cause a thrown host error carries, or `unclassified`. */
export function failureCauseOf(thrown: unknown): FailureCause {
  if (typeof thrown === 'object' && thrown !== null) {
    const cause = (thrown as { failureCause?: unknown }).failureCause
    if (isFailureCause(cause)) return cause
  }
  return 'unclassified'
}
