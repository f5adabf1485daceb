import type { RetryPolicy } from '@locus/retry'

/** The seed-001 policy every Locus row runs under: two attempts in all, the retry at once, no timeout. */
export const RETRY_ONCE_AT_ONCE: RetryPolicy = { timeout_secs: null, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 }

/** Every system's policy says the same: at most two attempts. */
export const MAX_ATTEMPTS = 2

/** Branches in flight at once, for every system. */
export const CONCURRENCY = 16
