import { hasLocusErrorCode } from '@locus/outcome'
import { WORKFLOW_INVOCATION_CAP } from './invocation-cap-error.js'
import { WORKFLOW_RUN_DEADLINE } from './run-deadline-error.js'

/** Codes of the hard, run-level errors that stop dispatch across a group tree. */
export const HARD_STOP_CODES = [WORKFLOW_INVOCATION_CAP, WORKFLOW_RUN_DEADLINE] as const
export type HardStopCode = (typeof HARD_STOP_CODES)[number]

/**
 * True when `error` is a hard stop: a {@link WorkflowInvocationCapError} or a
 * {@link WorkflowRunDeadlineError}, recognised by code so that an error from
 * another installed copy of this package counts too.
 *
 * @example
 * ```ts
 * if (isHardStopError(error)) throw error // never treat it as partial evidence
 * ```
 */
export function isHardStopError(error: unknown): boolean {
  return hasLocusErrorCode(error, WORKFLOW_INVOCATION_CAP) || hasLocusErrorCode(error, WORKFLOW_RUN_DEADLINE)
}
