import type { ErrorCode } from '@locus/outcome'
import type { AttemptOutcome } from '@locus/retry'

/**
 * One physical attempt of one LLM call, as `onLlmAttempt` receives it and as
 * `llm-attempts.jsonl` in the call's transcript directory records it. Times
 * are in the host clock's milliseconds.
 */
export interface LlmAttempt {
  readonly runId: string
  /** The physical `agent()` attempt (child session) this LLM call belongs to. */
  readonly callId: string
  readonly logicalCallId: string
  /** The agent role. */
  readonly agent: string
  /** The model id the request named. */
  readonly model: string
  /** Which prompt of the session: 1 for the first, 2 for a clarification turn, ... */
  readonly turn: number
  /** Which LLM call of the turn: a tool round trip makes a turn take several. */
  readonly step: number
  /** 1 for the first try of this LLM call, 2 for its first retry, ... */
  readonly attempt: number
  /** The policy's `max_retries`: the cap on total attempts. */
  readonly maxAttempts: number
  readonly outcome: AttemptOutcome
  readonly startedAt: number
  readonly endedAt: number
  /** The seed's label of the failure: `rate_limited`, `provider_error`, `refused`, `deadline_exceeded`, ... */
  readonly code?: ErrorCode
  /** The HTTP status, when the server answered. */
  readonly status?: number
  /** What went wrong, for a person. */
  readonly error?: string
  /** Whether the failure allowed a retry. */
  readonly retryable?: boolean
  /** The wait the server asked for with `Retry-After`, in milliseconds. */
  readonly retryAfterMs?: number
  /** The wait before the next attempt: `max(backoff, Retry-After)`; present only when another attempt follows. */
  readonly delayBeforeNextMs?: number
}
