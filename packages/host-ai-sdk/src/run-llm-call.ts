import { type RetryClock, type RetryPolicy, CallError, runWithRetry } from '@locus/retry'
import { type LlmFailure, classifyLlmError } from './classify-llm-error.js'
import type { LlmAttempt } from './llm-attempt.js'

/** The parts of an {@link LlmAttempt} that the retry loop knows. */
export type LlmAttemptRecord = Omit<LlmAttempt, 'runId' | 'callId' | 'logicalCallId' | 'agent' | 'model' | 'turn' | 'step' | 'streamed' | 'timeToFirstTokenMs' | 'turnBudget'>

/** How one LLM call ended after its retries. */
export type LlmCallOutcome<T> =
  | { readonly ok: true; readonly value: T; readonly attempts: number }
  | { readonly ok: false; readonly reason: 'terminal' | 'exhausted'; readonly failure: LlmFailure; readonly attempts: number }
  | { readonly ok: false; readonly reason: 'cancelled'; readonly attempts: number }

export interface LlmCallSettings {
  readonly policy: RetryPolicy
  readonly clock: RetryClock
  /** The turn's signal: aborting it cancels the request in flight and any wait. */
  readonly signal: AbortSignal
  readonly onAttempt: (record: LlmAttemptRecord) => void
  /**
   * The run's shared rate limits: awaited before each request is sent
   * (outside the attempt's deadline), and told a 429's `Retry-After` at once.
   * When given, the loop leaves a 429's `Retry-After` to it instead of
   * sleeping it out itself.
   */
  readonly rate?: {
    readonly beforeRequest: (signal: AbortSignal) => Promise<void> | void
    readonly retryAfter: (ms: number) => void
  } | undefined
}

/**
 * Sends one LLM request under a seed-001 retry policy with `runWithRetry`:
 * each attempt gets the policy's deadline (its signal reaches `fetch`), a
 * classified failure retries only when retryable, and after a 429 the next
 * attempt waits `max(backoff, Retry-After)`. With `rate` (the run's shared
 * rate limits), a 429's `Retry-After` closes the shared limit instead, and
 * every request, the first included, waits for room in it before it is sent.
 *
 * The Retry-After floor is laid on the backoff sleep through a clock wrapper.
 * When the policy's backoff is zero, `runWithRetry` does not sleep at all, so
 * the next attempt waits out the rest of the floor before sending; that wait
 * then counts toward the attempt's `timeout_secs`.
 */
export async function runLlmCall<T>(send: (signal: AbortSignal, attempt: number) => Promise<T>, settings: LlmCallSettings): Promise<LlmCallOutcome<T>> {
  const { clock, signal, policy } = settings
  const failures = new Map<number, LlmFailure>()
  // Clock time before which the next request may not be sent, set by a Retry-After.
  let floorUntil: number | undefined
  let backoffArmed = false

  const flooredClock: RetryClock = {
    now: () => clock.now(),
    sleep: (ms, sleepSignal) => {
      // The backoff sleep is the one runWithRetry starts right after onAttempt, with the caller's signal.
      if (backoffArmed && sleepSignal === signal) {
        backoffArmed = false
        const until = floorUntil
        floorUntil = undefined
        return clock.sleep(until === undefined ? ms : Math.max(ms, until - clock.now()), sleepSignal)
      }
      return clock.sleep(ms, sleepSignal)
    },
  }

  const outcome = await runWithRetry(
    async ({ attempt, signal: attemptSignal }) => {
      if (floorUntil !== undefined) {
        const remaining = floorUntil - clock.now()
        floorUntil = undefined
        if (remaining > 0) await clock.sleep(remaining, attemptSignal)
      }
      try {
        return await send(attemptSignal, attempt)
      } catch (thrown) {
        const failure = classifyLlmError(thrown)
        // A request abandoned at its deadline fails later with an abort; that late failure says nothing.
        if (!attemptSignal.aborted) failures.set(attempt, failure)
        throw new CallError(failure.error, { retryable: failure.retryable, code: failure.code, cause: thrown })
      }
    },
    policy,
    {
      clock: flooredClock,
      signal,
      ...(settings.rate === undefined ? {} : { beforeAttempt: () => settings.rate?.beforeRequest(signal) }),
      onAttempt: (record) => {
        const failure = failures.get(record.attempt) ?? record.failure
        const classified = failures.get(record.attempt)
        let delayBeforeNextMs = record.delayBeforeNextMs
        if (settings.rate !== undefined && classified?.retryAfterMs !== undefined && (classified.code === 'rate_limited' || classified.status === 429)) {
          // Shared limits: every caller holds until the Retry-After has passed, this one in beforeRequest.
          settings.rate.retryAfter(classified.retryAfterMs)
        } else if (delayBeforeNextMs !== undefined && classified?.retryAfterMs !== undefined) {
          floorUntil = record.endedAt + classified.retryAfterMs
          delayBeforeNextMs = Math.max(delayBeforeNextMs, classified.retryAfterMs)
          backoffArmed = record.delayBeforeNextMs !== undefined && record.delayBeforeNextMs > 0
        }
        settings.onAttempt({
          attempt: record.attempt,
          maxAttempts: policy.max_retries,
          outcome: record.outcome,
          startedAt: record.startedAt,
          endedAt: record.endedAt,
          durationMs: record.endedAt - record.startedAt,
          ...(failure === undefined
            ? {}
            : {
                error: failure.error,
                retryable: failure.retryable,
                ...(failure.code === undefined ? {} : { code: failure.code }),
              }),
          ...(classified?.status === undefined ? {} : { status: classified.status }),
          ...(classified?.retryAfterMs === undefined ? {} : { retryAfterMs: classified.retryAfterMs }),
          ...(delayBeforeNextMs === undefined ? {} : { delayBeforeNextMs }),
        })
      },
    },
  )
  const attempts = outcome.attempts.length
  if (outcome.ok) return { ok: true, value: outcome.value, attempts }
  if (outcome.reason === 'cancelled') return { ok: false, reason: 'cancelled', attempts }
  const last = outcome.attempts.at(-1)
  const classified = last === undefined ? undefined : failures.get(last.attempt)
  const failure: LlmFailure = classified ?? {
    error: outcome.failure.error,
    retryable: outcome.failure.retryable,
    code: outcome.failure.code ?? 'provider_error',
    cause: outcome.failure.cause,
  }
  return { ok: false, reason: outcome.reason, failure, attempts }
}
