import type { CallFailure } from './call-failure.js'

/** What each attempt of an operation receives. */
export interface AttemptContext {
  /** 1 for the first try, 2 for the first retry, ... */
  readonly attempt: number
  /**
   * Aborts when the attempt's deadline passes (reason: a `TimeoutError`
   * DOMException) or the caller cancels (reason: the caller's). Pass it to
   * `fetch` and friends. With no timeout and no caller signal it never aborts.
   */
  readonly signal: AbortSignal
  /** When the attempt times out, in the clock's milliseconds; `null` when it has no timeout. */
  readonly deadline: number | null
}

/** Reported by `onAttemptStart` just before an attempt runs. */
export interface AttemptStart {
  readonly attempt: number
  readonly startedAt: number
  readonly deadline: number | null
}

/** How one attempt ended. */
export type AttemptOutcome = 'succeeded' | 'failed' | 'timed-out' | 'cancelled'

/** The record of one physical attempt, in clock milliseconds. */
export interface AttemptRecord {
  readonly attempt: number
  readonly startedAt: number
  readonly endedAt: number
  /** The attempt's deadline, or `null` when the policy has no timeout. */
  readonly deadline: number | null
  readonly outcome: AttemptOutcome
  /** Why it failed; present unless it succeeded. A timeout is `deadline_exceeded` and retryable. */
  readonly failure?: CallFailure
  /** The backoff planned before the next attempt; present only when another attempt was going to follow. */
  readonly delayBeforeNextMs?: number
  /**
   * Present when the policy allowed another attempt but it was refused: by the
   * shared retry `budget`, or because it could not start before `retryDeadline`.
   * This record is then the last one.
   */
  readonly retryDenied?: 'budget' | 'deadline'
  /** With `retryDenied`: the backoff (after jitter) the refused retry would have waited. */
  readonly deniedDelayMs?: number
  /**
   * `true` when the loop stopped waiting for this attempt while it was still
   * running (its deadline passed, or the caller cancelled): whatever it
   * produces later is discarded, and reported to `onLateResult` if given.
   */
  readonly lateResultDiscarded?: boolean
}

/** What an abandoned attempt eventually produced, reported to `onLateResult`; its value is never used. */
export interface LateResult {
  readonly attempt: number
  /** When it finally settled, in clock milliseconds. */
  readonly settledAt: number
  readonly outcome: 'succeeded' | 'failed'
  /** Present when it failed. */
  readonly failure?: CallFailure
  /**
   * What ended the attempt before it settled: its deadline (`timed-out`) or a
   * cancellation of the caller's signal (`cancelled`). A failure that settles
   * after a cancellation is usually the operation letting go of the abort.
   */
  readonly endedBy: 'timed-out' | 'cancelled'
}

/**
 * Why the loop stopped:
 * - `succeeded`: an attempt returned a value.
 * - `terminal`: a failure was not retryable (or `shouldRetry` said no).
 * - `exhausted`: a retryable failure, but `max_retries` attempts were spent
 *   (or the shared retry budget or the `retryDeadline` refused the retry).
 * - `cancelled`: the caller's signal aborted.
 */
export type RetryStopReason = 'succeeded' | 'terminal' | 'exhausted' | 'cancelled'

/** The settled result of `runWithRetry`: never a rejection for an operation's failure. */
export type RetryOutcome<T> =
  | { readonly ok: true; readonly value: T; readonly attempts: AttemptRecord[]; readonly reason: 'succeeded' }
  | {
      readonly ok: false
      /** The failure that ended the call: the last attempt's, or the cancellation. */
      readonly failure: CallFailure
      readonly attempts: AttemptRecord[]
      readonly reason: Exclude<RetryStopReason, 'succeeded'>
      /** `true` when the reason is `exhausted` because the shared retry budget refused a retry the policy allowed. */
      readonly budgetDenied?: true
      /**
       * `true` when the reason is `exhausted` because the retry could not start
       * before `retryDeadline`: its backoff would have ended at or after it.
       */
      readonly deadlineDenied?: true
      /** The backoff (after jitter) the refused retry would have waited; present with `budgetDenied` or `deadlineDenied`. */
      readonly deniedDelayMs?: number
    }
