/**
 * Stable codes of the errors this package throws or builds. Callers branch on
 * these, never on message text.
 *
 * - `RETRY_POLICY_INVALID`: a retry policy or a transport `attempts` count, usually
 *   read from JSON or YAML, broke a rule ({@link RetryPolicyError}).
 * - `RETRY_OPTIONS_INVALID`: an argument given in code broke a rule: a jitter mode,
 *   a budget setting, a retry number ({@link RetryOptionsError}).
 * - `CALL_FAILED`: a tool or LLM call failed, carrying the seed's `retryable` and
 *   `code` ({@link CallError}).
 */
export const RETRY_ERROR_CODES = ['RETRY_POLICY_INVALID', 'RETRY_OPTIONS_INVALID', 'CALL_FAILED'] as const

/** One of {@link RETRY_ERROR_CODES}. */
export type RetryErrorCode = (typeof RETRY_ERROR_CODES)[number]
