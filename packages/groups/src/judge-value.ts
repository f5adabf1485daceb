import { type FailureStatus, type OutcomeFailureReason, classifyOutcome, prepareWorkflowResult } from '@locus/outcome'

/** Why a returned value failed its slot; `undefined` from {@link judgeReturnedValue} means success. */
export type ReturnedValueFailure =
  | { readonly kind: 'boundary'; readonly error: unknown }
  | { readonly kind: 'returned'; readonly reasons: readonly OutcomeFailureReason[]; readonly status: FailureStatus | undefined }

/**
 * Judges a branch's or stage's direct return value with the shared contract:
 * it must cross `prepareWorkflowResult` (else a boundary failure), and the
 * detached copy must not be a semantic failure (`classifyOutcome`).
 */
export function judgeReturnedValue(value: unknown): ReturnedValueFailure | undefined {
  // Primitives other than BigInt always detach, and a detached primitive is
  // never a failure: skip the copy on the hot path.
  const type = typeof value
  if (value === null || (type !== 'object' && type !== 'bigint')) return undefined
  let detached: unknown
  try {
    detached = prepareWorkflowResult(value)
  } catch (error) {
    return { kind: 'boundary', error }
  }
  const outcome = classifyOutcome(detached)
  if (!outcome.failed) return undefined
  return { kind: 'returned', reasons: outcome.reasons, status: outcome.status }
}
