import type { AttemptContext, AttemptRecord, AttemptStart, LateResult, RetryOutcome } from './attempt.js'
import { type JitterMode, JITTER_MODES, applyJitter, backoffDelaySecs, isJitterMode } from './backoff.js'
import { type CallFailure, toCallFailure } from './call-failure.js'
import { LONGEST_TIMER_MS, type RetryClock, systemClock } from './clock.js'
import { describeValue } from './describe-value.js'
import { offAbort, onAbort } from './abort-fanout.js'
import type { RetryBudget } from './retry-budget.js'
import { RetryOptionsError } from './retry-options-error.js'
import { type RetryPolicy, isRetryPolicy, parseRetryPolicy } from './retry-policy.js'

/** Options of {@link runWithRetry}. Every one is optional and none changes the seed's behaviour unless set. */
export interface RetryOptions {
  /** The caller's cancellation. Aborting it ends the loop as `cancelled`, during an attempt or a backoff wait. */
  readonly signal?: AbortSignal | undefined
  /** Where time is read and waited. @default systemClock */
  readonly clock?: RetryClock | undefined
  /** Called just before each attempt runs (journal a `tool_start` here). */
  readonly onAttemptStart?: ((start: AttemptStart) => void) | undefined
  /** Called when each attempt ends, with its complete record (journal a `tool_end` here). */
  readonly onAttempt?: ((record: AttemptRecord) => void) | undefined
  /**
   * Called when an abandoned attempt (timed out or cancelled) settles after all;
   * its result is discarded. It may run after `runWithRetry` has resolved, so an
   * exception it throws has no caller left: it is ignored (it never becomes an
   * unhandled rejection that would end the process).
   */
  readonly onLateResult?: ((late: LateResult) => void) | undefined
  /**
   * Overrides the decision to retry a failed (or timed-out) attempt. By default
   * only `failure.retryable === true` retries. Attempts still stop at
   * `max_retries`, and a cancellation is never retried.
   */
  readonly shouldRetry?: ((failure: CallFailure, record: AttemptRecord) => boolean) | undefined
  /** Spreads each backoff delay. @default 'none' (the seed's exact formula) */
  readonly jitter?: JitterMode | undefined
  /** The random source for jitter, returning [0, 1). @default Math.random */
  readonly random?: (() => number) | undefined
  /** A retry pool shared with other calls; each retry must draw from it. */
  readonly budget?: RetryBudget | undefined
  /**
   * A clock reading at or after which no retry may start, such as a run's
   * deadline. A retry whose backoff would end at or after it is refused at
   * once, without waiting out the backoff and without drawing from `budget`:
   * the loop stops as `exhausted` with `deadlineDenied: true`. It never cuts
   * short an attempt already running, and the first attempt is the caller's
   * to refuse. @default no deadline
   */
  readonly retryDeadline?: number | undefined
  /**
   * What the loop does when an attempt's deadline passes or the caller cancels
   * while it runs:
   * - `abandon`: stop waiting at once, record the attempt as `timed-out` (or
   *   `cancelled`) with `lateResultDiscarded`, and discard what it produces later.
   * - `await`: abort the attempt's signal (a `TimeoutError` at the deadline) and
   *   keep waiting until the attempt settles. Its own value stands; its own
   *   failure is recorded, as `timed-out` when its deadline had passed (it is
   *   not replaced by a generic `deadline_exceeded`), or as the cancellation
   *   when the caller cancelled. Use it when an attempt must clean up and report
   *   before the next one may start; the attempt must honour its signal.
   * @default 'abandon'
   */
  readonly atDeadline?: 'abandon' | 'await' | undefined
  /**
   * Awaited before each attempt starts, before its clock reading and its
   * deadline: a wait for room in a shared rate limit, which is not part of
   * the attempt and spends none of its timeout. Aborting `signal` while it
   * waits ends the loop as `cancelled`; if it rejects otherwise, the loop
   * rejects with that error. @default none
   */
  readonly beforeAttempt?: ((attempt: number) => Promise<void> | void) | undefined
}

type Settlement<T> =
  | { readonly kind: 'value'; readonly value: T }
  | { readonly kind: 'thrown'; readonly thrown: unknown; readonly afterDeadline?: true }
  | { readonly kind: 'timed-out'; readonly reason: unknown }
  | { readonly kind: 'cancelled'; readonly awaited?: true }

/** An attempt nothing can cut short: the loop awaits `pending` itself, which costs no extra promise. */
interface Unbounded<T> {
  readonly kind: 'pending'
  readonly pending: PromiseLike<T>
}

/**
 * The context handed to an attempt. Its signal is created only when the
 * operation reads it: an attempt with no deadline and no caller signal then
 * costs no AbortController, yet every operation that asks gets its own signal
 * (a signal shared across calls would collect their listeners forever).
 */
class RunningAttempt implements AttemptContext {
  readonly attempt: number
  readonly deadline: number | null
  readonly #callerSignal: AbortSignal | undefined
  #controller: AbortController | undefined
  #aborted = false
  #abortReason: unknown

  constructor(attempt: number, deadline: number | null, callerSignal: AbortSignal | undefined) {
    this.attempt = attempt
    this.deadline = deadline
    this.#callerSignal = callerSignal
  }

  get signal(): AbortSignal {
    // Without a deadline the caller's signal already says everything the attempt needs to hear.
    if (this.deadline === null && this.#callerSignal !== undefined) return this.#callerSignal
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.#aborted) this.#controller.abort(this.#abortReason)
    }
    return this.#controller.signal
  }

  abort(reason: unknown): void {
    if (this.#aborted) return
    this.#aborted = true
    this.#abortReason = reason
    this.#controller?.abort(reason)
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    ((typeof value === 'object' && value !== null) || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  )
}

function timeoutReason(attempt: number, timeoutSecs: number): DOMException {
  return new DOMException(`attempt ${attempt} exceeded its ${timeoutSecs} s timeout`, 'TimeoutError')
}

interface LoopSettings {
  readonly clock: RetryClock
  readonly signal: AbortSignal | undefined
  readonly timeoutSecs: number | null
  readonly onLateResult: ((late: LateResult) => void) | undefined
}

/**
 * Runs one attempt to its end under `atDeadline: 'await'`: the deadline and a
 * cancellation only abort its signal. The deadline is armed before the
 * operation starts, so it is the attempt's first timer.
 */
async function runAwaitedAttempt<T>(
  operation: (context: AttemptContext) => Promise<T> | T,
  context: RunningAttempt,
  settings: LoopSettings,
): Promise<Settlement<T>> {
  const { clock, signal, timeoutSecs } = settings
  const onCancel = (): void => {
    context.abort(signal?.reason)
  }
  const cancelDeadline =
    context.deadline === null || timeoutSecs === null
      ? undefined
      : armDeadline(clock, context.deadline - clock.now(), () => {
          context.abort(timeoutReason(context.attempt, timeoutSecs))
        })
  if (signal?.aborted === true) onCancel()
  else signal?.addEventListener('abort', onCancel, { once: true })
  try {
    return { kind: 'value', value: await operation(context) }
  } catch (thrown) {
    if (isAborted(signal)) return { kind: 'cancelled', awaited: true }
    if (context.deadline !== null && clock.now() >= context.deadline) return { kind: 'thrown', thrown, afterDeadline: true }
    return { kind: 'thrown', thrown }
  } finally {
    cancelDeadline?.()
    signal?.removeEventListener('abort', onCancel)
  }
}

/** Runs one attempt, racing it against its deadline and the caller's signal when there are any. */
function runAttempt<T>(
  operation: (context: AttemptContext) => Promise<T> | T,
  context: RunningAttempt,
  settings: LoopSettings,
): Settlement<T> | Unbounded<T> | Promise<Settlement<T>> {
  const { clock, signal, timeoutSecs } = settings
  let result: Promise<T> | T
  try {
    result = operation(context)
  } catch (thrown) {
    return settleSynchronously(context, settings, { kind: 'thrown', thrown })
  }
  if (!isThenable(result)) return settleSynchronously(context, settings, { kind: 'value', value: result })

  // The fast path: nothing can end this attempt early, so the loop simply awaits it.
  if (context.deadline === null && signal === undefined) return { kind: 'pending', pending: result }

  const pending = result
  return new Promise<Settlement<T>>((resolve) => {
    let settled = false
    // What ended the attempt before it settled: its deadline or a cancellation.
    let endedBy: LateResult['endedBy'] = 'timed-out'
    let cancelDeadline: (() => void) | undefined
    const finish = (settlement: Settlement<T>): boolean => {
      if (settled) return false
      settled = true
      if (settlement.kind === 'cancelled') endedBy = 'cancelled'
      cancelDeadline?.()
      if (signal !== undefined) offAbort(signal, onCancel)
      resolve(settlement)
      return true
    }
    const onCancel = (): void => {
      if (finish({ kind: 'cancelled' })) context.abort(signal?.reason)
    }
    const reportLate = (late: LateResult): void => {
      // The attempt settled long ago, so a hook that throws has nobody to tell: it must not become an
      // unhandled rejection that ends the process (a journal that can no longer be written throws here).
      try {
        settings.onLateResult?.(late)
      } catch {
        // ignored, as documented on onLateResult
      }
    }

    void Promise.resolve(pending).then(
      (value) => {
        if (!finish({ kind: 'value', value })) {
          reportLate({ attempt: context.attempt, settledAt: clock.now(), outcome: 'succeeded', endedBy })
        }
      },
      (thrown: unknown) => {
        if (!finish({ kind: 'thrown', thrown })) {
          reportLate({ attempt: context.attempt, settledAt: clock.now(), outcome: 'failed', failure: toCallFailure(thrown), endedBy })
        }
      },
    )

    // The deadline is armed first so that a cancellation seen right below also disarms it.
    if (context.deadline !== null && timeoutSecs !== null) {
      cancelDeadline = armDeadline(clock, context.deadline - clock.now(), () => {
        const reason = timeoutReason(context.attempt, timeoutSecs)
        if (finish({ kind: 'timed-out', reason })) context.abort(reason)
      })
    }

    if (signal !== undefined) {
      // One listener on the signal for all attempts: a run's signal may have thousands waiting on it.
      if (signal.aborted) onCancel()
      else onAbort(signal, onCancel)
    }
  })
}

/** The reason a deadline timer is cancelled with; a constant, because a default abort reason costs a stack trace. */
const DEADLINE_NOT_NEEDED = Symbol('deadline not needed')

/**
 * Calls `onDeadline` after `ms` on `clock` unless the returned function is
 * called first. The system clock gets a plain timer: an AbortController and
 * its listener would cost more than the rest of an attempt together.
 */
function armDeadline(clock: RetryClock, ms: number, onDeadline: () => void): () => void {
  if (clock === systemClock && ms <= LONGEST_TIMER_MS) {
    const timer = setTimeout(onDeadline, Math.max(0, ms))
    return () => {
      clearTimeout(timer)
    }
  }
  const controller = new AbortController()
  // A custom clock may reject its sleep on abort; that abort is ours and means "no deadline".
  clock.sleep(ms, controller.signal).then(
    () => {
      if (!controller.signal.aborted) onDeadline()
    },
    () => undefined,
  )
  return () => {
    controller.abort(DEADLINE_NOT_NEEDED)
  }
}

/** A synchronous result that arrived after the deadline is as late as an asynchronous one. */
function settleSynchronously<T>(context: RunningAttempt, settings: LoopSettings, settlement: Settlement<T>): Settlement<T> {
  if (context.deadline === null || settings.timeoutSecs === null || settings.clock.now() <= context.deadline) return settlement
  const reason = timeoutReason(context.attempt, settings.timeoutSecs)
  context.abort(reason)
  return { kind: 'timed-out', reason }
}

/** Seconds to milliseconds, rounded to the microsecond so that 1.001 s is exactly 1001 ms rather than 1000.9999999999999. */
function toMilliseconds(secs: number): number {
  const rounded = Math.round(secs * 1_000_000) / 1000
  return Number.isFinite(rounded) ? rounded : secs * 1000
}

/** Reads the flag afresh: it changes while the loop awaits, which narrowing cannot see. */
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true
}

function cancelledFailure(when: string, signal: AbortSignal | undefined): CallFailure {
  return { error: `cancelled by the caller ${when}`, retryable: false, cause: signal?.reason }
}

/**
 * Runs `operation` under a {@link RetryPolicy}: each attempt is bounded by
 * `timeout_secs`, a failure marked `retryable: true` (or a timeout, stamped
 * `deadline_exceeded`) is re-issued after `min(base ** n, max)` seconds,
 * and the loop stops on success, a terminal failure, `max_retries` attempts,
 * or the caller's signal, whichever comes first.
 *
 * An operation fails by throwing or rejecting: with a {@link CallError}, any
 * `Error` carrying `retryable` and `code`, or anything else (which is
 * terminal). The returned promise resolves with every attempt recorded; it
 * rejects only for a bad policy or option ({@link RetryPolicyError},
 * {@link RetryOptionsError}) or when an observer (`onAttemptStart`,
 * `onAttempt`, `shouldRetry`) throws, because a journal that cannot record an
 * attempt should stop the loop rather than be skipped.
 *
 * An attempt that ignores its abort signal cannot hold the loop past its
 * deadline: the loop moves on, marks the attempt `lateResultDiscarded`, and
 * discards whatever it produces later.
 *
 * @example
 * ```ts
 * const outcome = await runWithRetry(
 *   async ({ signal }) => {
 *     const response = await fetch(url, { signal })
 *     if (response.status === 503) throw new CallError('upstream 503', { retryable: true, code: 'provider_error' })
 *     return response.json()
 *   },
 *   { timeout_secs: 30, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 60 },
 * )
 * if (!outcome.ok) console.error(outcome.reason, outcome.failure.error)
 * ```
 */
export async function runWithRetry<T>(
  operation: (context: AttemptContext) => Promise<T> | T,
  policy: RetryPolicy,
  options: RetryOptions = {},
): Promise<RetryOutcome<T>> {
  if (typeof operation !== 'function') {
    throw new RetryOptionsError('operation', `runWithRetry: operation must be a function, got ${describeValue(operation)}`)
  }
  // The fast check allocates nothing; only an invalid policy pays for zod's detailed report.
  if (!isRetryPolicy(policy)) parseRetryPolicy(policy)
  const jitter = options.jitter ?? 'none'
  if (!isJitterMode(jitter)) {
    throw new RetryOptionsError('jitter', `runWithRetry: jitter must be one of ${JITTER_MODES.join(', ')}, got ${describeValue(jitter)}`)
  }
  const clock = options.clock ?? systemClock
  const signal = options.signal
  const { onAttempt, onAttemptStart, shouldRetry, budget } = options
  const retryDeadline = options.retryDeadline
  if (retryDeadline !== undefined && (typeof retryDeadline !== 'number' || Number.isNaN(retryDeadline))) {
    throw new RetryOptionsError('retryDeadline', `runWithRetry: retryDeadline must be a clock reading in milliseconds, got ${describeValue(retryDeadline)}`)
  }
  const atDeadline: unknown = options.atDeadline ?? 'abandon'
  if (atDeadline !== 'abandon' && atDeadline !== 'await') {
    throw new RetryOptionsError('atDeadline', `runWithRetry: atDeadline must be 'abandon' or 'await', got ${describeValue(atDeadline)}`)
  }
  const settings: LoopSettings = { clock, signal, timeoutSecs: policy.timeout_secs, onLateResult: options.onLateResult }
  const timeoutMs = policy.timeout_secs === null ? null : toMilliseconds(policy.timeout_secs)
  const attempts: AttemptRecord[] = []

  if (isAborted(signal)) {
    return { ok: false, failure: cancelledFailure('before the first attempt', signal), attempts, reason: 'cancelled' }
  }

  for (let attempt = 1; ; attempt += 1) {
    if (options.beforeAttempt !== undefined) {
      await options.beforeAttempt(attempt)
      if (isAborted(signal)) {
        return { ok: false, failure: cancelledFailure(attempt === 1 ? 'before the first attempt' : `while waiting before attempt ${attempt}`, signal), attempts, reason: 'cancelled' }
      }
    }
    const startedAt = clock.now()
    const deadline = timeoutMs === null ? null : startedAt + timeoutMs
    onAttemptStart?.({ attempt, startedAt, deadline })
    const context = new RunningAttempt(attempt, deadline, signal)
    const running = atDeadline === 'await' ? runAwaitedAttempt(operation, context, settings) : runAttempt(operation, context, settings)
    let settlement: Settlement<T>
    if (running instanceof Promise) settlement = await running
    else if (running.kind !== 'pending') settlement = running
    else {
      try {
        settlement = { kind: 'value', value: await running.pending }
      } catch (thrown) {
        settlement = { kind: 'thrown', thrown }
      }
    }
    const endedAt = clock.now()

    if (settlement.kind === 'value') {
      const record: AttemptRecord = { attempt, startedAt, endedAt, deadline, outcome: 'succeeded' }
      attempts.push(record)
      onAttempt?.(record)
      return { ok: true, value: settlement.value, attempts, reason: 'succeeded' }
    }

    if (settlement.kind === 'cancelled') {
      const failure = cancelledFailure(`during attempt ${attempt}`, signal)
      const record: AttemptRecord = settlement.awaited === true
        ? { attempt, startedAt, endedAt, deadline, outcome: 'cancelled', failure }
        : { attempt, startedAt, endedAt, deadline, outcome: 'cancelled', failure, lateResultDiscarded: true }
      attempts.push(record)
      onAttempt?.(record)
      return { ok: false, failure, attempts, reason: 'cancelled' }
    }

    const timedOut = settlement.kind === 'timed-out' || settlement.afterDeadline === true
    const failure: CallFailure = settlement.kind === 'timed-out'
      ? {
          error: `attempt ${attempt} did not finish within its ${String(policy.timeout_secs)} s timeout`,
          retryable: true,
          code: 'deadline_exceeded',
          cause: settlement.reason,
        }
      : toCallFailure(settlement.thrown)
    const ended: AttemptRecord = !timedOut
      ? { attempt, startedAt, endedAt, deadline, outcome: 'failed', failure }
      : settlement.kind === 'timed-out'
        ? { attempt, startedAt, endedAt, deadline, outcome: 'timed-out', failure, lateResultDiscarded: true }
        : { attempt, startedAt, endedAt, deadline, outcome: 'timed-out', failure }

    const wantsRetry = shouldRetry === undefined ? failure.retryable : shouldRetry(failure, ended)
    if (!wantsRetry || attempt >= policy.max_retries) {
      attempts.push(ended)
      onAttempt?.(ended)
      return { ok: false, failure, attempts, reason: wantsRetry ? 'exhausted' : 'terminal' }
    }

    // Jitter works on milliseconds so that its bounds hold exactly for the recorded figure.
    const delayBeforeNextMs = applyJitter(backoffDelaySecs(attempt, policy) * 1000, jitter, options.random)
    if (!isAborted(signal)) {
      // The deadline is asked first: a retry it refuses must not spend a token of the shared budget.
      const deadlineDenied = retryDeadline !== undefined && clock.now() + delayBeforeNextMs >= retryDeadline
      if (deadlineDenied || (budget !== undefined && !budget.tryWithdraw())) {
        const denied: AttemptRecord = { ...ended, retryDenied: deadlineDenied ? 'deadline' : 'budget', deniedDelayMs: delayBeforeNextMs }
        attempts.push(denied)
        onAttempt?.(denied)
        return deadlineDenied
          ? { ok: false, failure, attempts, reason: 'exhausted', deadlineDenied: true, deniedDelayMs: delayBeforeNextMs }
          : { ok: false, failure, attempts, reason: 'exhausted', budgetDenied: true, deniedDelayMs: delayBeforeNextMs }
      }
    }
    const record: AttemptRecord = { ...ended, delayBeforeNextMs }
    attempts.push(record)
    onAttempt?.(record)

    if (delayBeforeNextMs > 0 && !isAborted(signal)) {
      try {
        await clock.sleep(delayBeforeNextMs, signal)
      } catch (error) {
        // Only an abort may cut a backoff short; any other rejection is a broken clock.
        if (!isAborted(signal)) throw error
      }
    }
    if (isAborted(signal)) {
      const failure = cancelledFailure(`while waiting ${delayBeforeNextMs} ms before attempt ${attempt + 1}`, signal)
      return { ok: false, failure, attempts, reason: 'cancelled' }
    }
  }
}
