import type { ErrorCode } from '@locus/outcome'
import type { AttemptOutcome } from '@locus/retry'
import type { TurnBudgetBound } from './turn-budget.js'

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
  /** `endedAt - startedAt`: how long the attempt took. */
  readonly durationMs: number
  /** True when the answer was asked for as a stream (`streamText`). */
  readonly streamed: boolean
  /** Milliseconds from sending the request to the first streamed token, when one came. */
  readonly timeToFirstTokenMs?: number
  /** Set when the host's turn budget ended this attempt: which bound expired. */
  readonly turnBudget?: TurnBudgetBound
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
  /**
   * Tokens the provider reported for this request (a succeeded attempt whose
   * answer carried usage): every input and output token, and, when the
   * provider said, how many input tokens were read from or written to its
   * cache and how many output tokens were reasoning.
   */
  readonly usage?: {
    readonly inputTokens: number
    readonly outputTokens: number
    readonly cacheReadTokens?: number
    readonly cacheWriteTokens?: number
    readonly reasoningTokens?: number
  }
}

/**
 * Progress of a streamed LLM call, for a live view: sent at the first token of
 * each attempt at once, then at most every `progressIntervalMs`, then when the
 * step finishes. Never meant to be journaled token by token.
 */
export interface LlmProgress {
  readonly runId: string
  readonly callId: string
  readonly logicalCallId: string
  readonly agent: string
  readonly model: string
  readonly turn: number
  readonly step: number
  readonly attempt: number
  /** `first-token` once per attempt, `tokens` while it streams, `step-end` with the exact usage. */
  readonly kind: 'first-token' | 'tokens' | 'step-end'
  /**
   * Output tokens of the turn so far: the reported usage of its finished
   * steps plus the chunks of the step in flight (one chunk is about one
   * token; exact once `kind` is `step-end` and the server reports usage).
   */
  readonly outputTokens: number
  /** Characters of answer text streamed by the attempt in flight. */
  readonly textChars: number
  /** Milliseconds since the attempt's request was sent. */
  readonly elapsedMs: number
  /** Milliseconds from the request to the attempt's first token. */
  readonly timeToFirstTokenMs?: number
}
