import { LocusError, hasLocusErrorCode } from '@locus/outcome'

export const RETRY_POLICY_INVALID = 'RETRY_POLICY_INVALID'

/** One broken rule in a retry policy: the field, and what it must be. */
export interface RetryPolicyIssue {
  /** The field at fault, as written in the policy (`max_retries`), or `policy` for the whole value. */
  readonly field: string
  /** The full sentence, as `max_retries must be an integer >= 1, got 0`. */
  readonly message: string
}

/**
 * A retry policy (or a transport `attempts` count) was refused. `field` names
 * the first field at fault and `issues` lists every broken rule, so a policy
 * read from a config file can be fixed in one pass.
 *
 * @example
 * ```ts
 * try { parseRetryPolicy(JSON.parse(text)) } catch (error) {
 *   if (RetryPolicyError.isInstance(error)) console.error(error.field, error.message)
 * }
 * ```
 */
export class RetryPolicyError extends LocusError {
  declare readonly code: typeof RETRY_POLICY_INVALID
  /** The first field at fault, as `max_retries` or `attempts`; `policy` when the value is not a policy object at all. */
  readonly field: string
  /** Every broken rule found, first one first. */
  readonly issues: readonly RetryPolicyIssue[]

  constructor(issues: readonly [RetryPolicyIssue, ...RetryPolicyIssue[]], cause?: unknown) {
    const [first] = issues
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more: ${issues.slice(1).map((issue) => issue.message).join('; ')})` : ''
    super(`Invalid retry policy: ${first.message}${more}.`, { code: RETRY_POLICY_INVALID, cause })
    this.name = 'RetryPolicyError'
    this.field = first.field
    this.issues = issues
  }

  /** True for a {@link RetryPolicyError} from any installed copy of this package. */
  static override isInstance(value: unknown): value is RetryPolicyError {
    return isRetryPolicyError(value)
  }
}

/** True for a {@link RetryPolicyError} from any installed copy of this package. */
export function isRetryPolicyError(value: unknown): value is RetryPolicyError {
  return hasLocusErrorCode(value, RETRY_POLICY_INVALID)
}
