import { z } from 'zod'
import { describeValue } from './describe-value.js'
import { RetryPolicyError, type RetryPolicyIssue } from './retry-policy-error.js'

/**
 * How one tool call, LLM call or sub-agent spawn is bounded and retried,
 * exactly as the engine protocol spells it.
 *
 * - `timeout_secs`: the deadline of each attempt, in seconds; `null` waits forever.
 * - `max_retries`: the cap on **total** attempts, despite its name: `1` is a single
 *   try, `3` allows up to two retries.
 * - `backoff_base_secs`: the delay before retry `n` is `backoff_base_secs ** n` seconds;
 *   `0` means retry at once.
 * - `backoff_max_secs`: the ceiling on that delay.
 *
 * @example
 * ```ts
 * const policy: RetryPolicy = { timeout_secs: 30, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 60 }
 * ```
 */
export interface RetryPolicy {
  readonly timeout_secs: number | null
  readonly max_retries: number
  readonly backoff_base_secs: number
  readonly backoff_max_secs: number
}

/** The four fields of a {@link RetryPolicy}, in the order they are checked and reported. */
export const RETRY_POLICY_FIELDS = ['timeout_secs', 'max_retries', 'backoff_base_secs', 'backoff_max_secs'] as const

/** What each field must be, as it reads in an error message. */
const RULES = {
  timeout_secs: 'a positive number of seconds, or null to wait forever',
  max_retries: 'an integer >= 1',
  backoff_base_secs: '0 (no wait) or a number >= 1 (a base below 1 would shrink each delay)',
  backoff_max_secs: 'a number of seconds >= 0',
} as const satisfies Record<(typeof RETRY_POLICY_FIELDS)[number], string>

function ruleMessage(field: keyof typeof RULES) {
  return (issue: { readonly input?: unknown }): string => {
    if (issue.input === undefined) return `${field} is missing: it must be ${RULES[field]}`
    if (field === 'max_retries' && typeof issue.input === 'number' && issue.input > Number.MAX_SAFE_INTEGER) {
      return `${field} must be at most ${Number.MAX_SAFE_INTEGER}, got ${describeValue(issue.input)}`
    }
    return `${field} must be ${RULES[field]}, got ${describeValue(issue.input)}`
  }
}

/**
 * The zod schema of a {@link RetryPolicy}. Every field is required, unknown
 * fields are refused (so a typo such as `max_retry` is caught rather than
 * ignored), and each message names the field, its rule and the value received.
 * Prefer {@link parseRetryPolicy}, which throws a typed error.
 */
export const RetryPolicySchema = z.strictObject(
  {
    timeout_secs: z.number({ error: ruleMessage('timeout_secs') }).positive({ error: ruleMessage('timeout_secs') }).nullable(),
    max_retries: z
      .number({ error: ruleMessage('max_retries') })
      .int({ error: ruleMessage('max_retries') })
      .min(1, { error: ruleMessage('max_retries') }),
    backoff_base_secs: z
      .number({ error: ruleMessage('backoff_base_secs') })
      .refine((base) => base === 0 || base >= 1, { error: ruleMessage('backoff_base_secs') }),
    backoff_max_secs: z.number({ error: ruleMessage('backoff_max_secs') }).min(0, { error: ruleMessage('backoff_max_secs') }),
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown field ${issue.keys.join(', ')}: a retry policy has exactly ${RETRY_POLICY_FIELDS.join(', ')}`
        : `policy must be an object with ${RETRY_POLICY_FIELDS.join(', ')}, got ${describeValue(issue.input)}`,
  },
) satisfies z.ZodType<RetryPolicy>

/**
 * The default: one attempt, no timeout, so no retry at all. Its backoff fields
 * (base 2, ceiling 60 s) only matter when a caller spreads it and raises
 * `max_retries`: `{ ...DEFAULT_RETRY_POLICY, max_retries: 3 }` then waits 2 s and
 * 4 s rather than hammering a failing service. Frozen.
 *
 * @default { timeout_secs: null, max_retries: 1, backoff_base_secs: 2, backoff_max_secs: 60 }
 */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  timeout_secs: null,
  max_retries: 1,
  backoff_base_secs: 2,
  backoff_max_secs: 60,
})

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value)
}

/**
 * A fast check that `value` is a valid {@link RetryPolicy}, with the same
 * rules as {@link RetryPolicySchema} (no extra fields, every field in range).
 * `runWithRetry` calls it on every run, so it allocates nothing.
 */
export function isRetryPolicy(value: unknown): value is RetryPolicy {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const policy = value as Record<string, unknown>
  const timeout = policy.timeout_secs
  const maxRetries = policy.max_retries
  const base = policy.backoff_base_secs
  const ceiling = policy.backoff_max_secs
  let keys = 0
  for (const key in policy) {
    if (!Object.hasOwn(policy, key)) continue
    keys += 1
    if (key !== 'timeout_secs' && key !== 'max_retries' && key !== 'backoff_base_secs' && key !== 'backoff_max_secs') return false
  }
  return (
    keys === 4 &&
    (timeout === null || (isFiniteNumber(timeout) && timeout > 0)) &&
    Number.isSafeInteger(maxRetries) &&
    (maxRetries as number) >= 1 &&
    isFiniteNumber(base) &&
    (base === 0 || base >= 1) &&
    isFiniteNumber(ceiling) &&
    ceiling >= 0
  )
}

/**
 * Validates a retry policy read from anywhere (JSON, YAML, an engine action)
 * and returns it as a fresh, typed object.
 *
 * Every field is required: a partial policy is refused rather than silently
 * filled. To fill gaps on purpose, spread the default first:
 * `parseRetryPolicy({ ...DEFAULT_RETRY_POLICY, ...partial })`.
 *
 * @throws {RetryPolicyError} naming the field and the rule, as
 *   `max_retries must be an integer >= 1, got 0`.
 * @example
 * ```ts
 * const policy = parseRetryPolicy(JSON.parse('{"timeout_secs":30,"max_retries":3,"backoff_base_secs":2,"backoff_max_secs":60}'))
 * ```
 */
export function parseRetryPolicy(input: unknown): RetryPolicy {
  const result = RetryPolicySchema.safeParse(input)
  if (result.success) return result.data
  const issues = result.error.issues.map((issue): RetryPolicyIssue => {
    const [head] = issue.path
    const field = issue.code === 'unrecognized_keys' ? (issue.keys[0] ?? 'policy') : head === undefined ? 'policy' : String(head)
    return { field, message: issue.message }
  })
  const [first, ...rest] = issues
  /* v8 ignore next -- zod never fails without an issue */
  if (first === undefined) throw new RetryPolicyError([{ field: 'policy', message: 'policy was refused' }], result.error)
  throw new RetryPolicyError([first, ...rest], result.error)
}
