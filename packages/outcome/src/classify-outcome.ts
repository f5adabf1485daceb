import { type FailureStatus, isFailureStatus } from './vocabulary.js'

/** The three conditions, each of which makes a detached value a semantic failure. */
export const OUTCOME_FAILURE_REASONS = ['ok-false', 'partial', 'status'] as const
export type OutcomeFailureReason = (typeof OUTCOME_FAILURE_REASONS)[number]

/** A detached value that is not a failure. */
export interface OutcomeSuccess {
  readonly failed: false
  readonly reasons: readonly []
}

/** A detached value that is a failure; `reasons` lists every condition that holds. */
export interface OutcomeFailure {
  readonly failed: true
  readonly reasons: readonly [OutcomeFailureReason, ...OutcomeFailureReason[]]
  /** The failure status, present when the `status` condition holds. */
  readonly status?: FailureStatus
}

export type OutcomeClassification = OutcomeSuccess | OutcomeFailure

const NO_REASONS: readonly [] = []
const SUCCESS: OutcomeSuccess = Object.freeze({ failed: false, reasons: NO_REASONS })

/**
 * Classifies a detached value (the output of `prepareWorkflowResult`) with the
 * one rule shared by the run root, direct `parallel()` branches and direct
 * `pipeline()` stages. A plain object fails when any of these holds, and every
 * one that holds is listed:
 *
 * - `ok === false` (`"ok-false"`)
 * - `partial === true` (`"partial"`)
 * - `status` is `"failed"`, `"blocked"` or `"cancelled"` (`"status"`)
 *
 * Everything else succeeds: non-objects, arrays, missing fields, a
 * non-boolean `ok` or `partial`, any other status string. The checks do not
 * depend on where the value was returned.
 *
 * @example
 * ```ts
 * classifyOutcome({ status: 'blocked', summary: 'Owner decision required' })
 * // => { failed: true, reasons: ['status'], status: 'blocked' }
 * ```
 */
export function classifyOutcome(value: unknown): OutcomeClassification {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return SUCCESS
  const record = value as { ok?: unknown; partial?: unknown; status?: unknown }
  const reasons: OutcomeFailureReason[] = []
  if (record.ok === false) reasons.push('ok-false')
  if (record.partial === true) reasons.push('partial')
  const status = record.status
  const hasFailureStatus = isFailureStatus(status)
  if (hasFailureStatus) reasons.push('status')
  if (reasons.length === 0) return SUCCESS
  const failedReasons = reasons as [OutcomeFailureReason, ...OutcomeFailureReason[]]
  return hasFailureStatus ? { failed: true, reasons: failedReasons, status } : { failed: true, reasons: failedReasons }
}

/** Shorthand for `classifyOutcome(value).failed`. */
export function isSemanticFailure(value: unknown): boolean {
  return classifyOutcome(value).failed
}
