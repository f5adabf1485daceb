export type { RetryPolicy } from './retry-policy.js'
export { DEFAULT_RETRY_POLICY, RETRY_POLICY_FIELDS, RetryPolicySchema, isRetryPolicy, parseRetryPolicy } from './retry-policy.js'
export { RETRY_ERROR_CODES } from './retry-error-codes.js'
export type { RetryErrorCode } from './retry-error-codes.js'
export { RETRY_POLICY_INVALID, RetryPolicyError, isRetryPolicyError } from './retry-policy-error.js'
export type { RetryPolicyIssue } from './retry-policy-error.js'
export { RETRY_OPTIONS_INVALID, RetryOptionsError, isRetryOptionsError } from './retry-options-error.js'
export { JITTER_MODES, applyJitter, backoffDelaySecs, isJitterMode } from './backoff.js'
export type { JitterMode } from './backoff.js'
export { toCallFailure } from './call-failure.js'
export type { CallFailure } from './call-failure.js'
export { CALL_FAILED, CallError, isCallError } from './call-error.js'
export type { CallErrorOptions } from './call-error.js'
export { systemClock } from './clock.js'
export type { RetryClock } from './clock.js'
export { createManualClock } from './manual-clock.js'
export type { ManualClock, PendingSleep } from './manual-clock.js'
export { createRetryBudget } from './retry-budget.js'
export type { RetryBudget, RetryBudgetOptions } from './retry-budget.js'
export { runWithRetry } from './run-with-retry.js'
export type { RetryOptions } from './run-with-retry.js'
export type {
  AttemptContext,
  AttemptOutcome,
  AttemptRecord,
  AttemptStart,
  LateResult,
  RetryOutcome,
  RetryStopReason,
} from './attempt.js'
export { TRANSPORT_RETRYABLE_CAUSES, isTransportRetryable, parseAttempts, transportRetryPolicy } from './transport-retry.js'
export type { TransportRetryableCause } from './transport-retry.js'
export { offAbort, onAbort } from './abort-fanout.js'
