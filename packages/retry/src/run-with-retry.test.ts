import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { AttemptContext, AttemptRecord, AttemptStart, LateResult } from './attempt.js'
import { backoffDelaySecs } from './backoff.js'
import { CallError } from './call-error.js'
import { createManualClock } from './manual-clock.js'
import { createRetryBudget } from './retry-budget.js'
import { isRetryOptionsError } from './retry-options-error.js'
import { isRetryPolicyError } from './retry-policy-error.js'
import type { RetryPolicy } from './retry-policy.js'
import { runWithRetry } from './run-with-retry.js'

const seedExample: RetryPolicy = { timeout_secs: 30, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 60 }
const noTimeout = (max_retries: number, backoff_base_secs = 2, backoff_max_secs = 60): RetryPolicy => ({
  timeout_secs: null,
  max_retries,
  backoff_base_secs,
  backoff_max_secs,
})

afterEach(() => {
  vi.useRealTimers()
})

const retryable503 = (): CallError => new CallError('upstream 503', { retryable: true, code: 'provider_error' })
const never = <T>(): Promise<T> => new Promise<T>(() => undefined)

describe('runWithRetry: the seed worked example', () => {
  it('timeout 30, 3 attempts, base 2, max 60: try, wait 2 s, try, wait 4 s, try, then settles as a terminal error', async () => {
    const clock = createManualClock(1_000)
    const started: number[] = []
    const running = runWithRetry(
      () => {
        started.push(clock.now())
        throw retryable503()
      },
      seedExample,
      { clock },
    )
    await clock.flush()
    expect(started).toEqual([1_000])
    expect(clock.pendingSleeps()).toEqual([{ wakeAt: 3_000, ms: 2_000 }])
    await clock.advance(1_999)
    expect(started).toEqual([1_000])
    await clock.advance(1)
    expect(started).toEqual([1_000, 3_000])
    await clock.advance(4_000)
    expect(started).toEqual([1_000, 3_000, 7_000])

    const outcome = await running
    expect(outcome.ok).toBe(false)
    if (outcome.ok) return
    expect(outcome.reason).toBe('exhausted')
    expect(outcome.failure).toMatchObject({ error: 'upstream 503', retryable: true, code: 'provider_error' })
    expect(outcome.attempts.map((record) => [record.attempt, record.startedAt, record.outcome, record.delayBeforeNextMs])).toEqual([
      [1, 1_000, 'failed', 2_000],
      [2, 3_000, 'failed', 4_000],
      [3, 7_000, 'failed', undefined],
    ])
    expect(outcome.attempts.map((record) => record.deadline)).toEqual([31_000, 33_000, 37_000])
    expect(clock.pendingSleeps()).toEqual([])
  })
})

describe('runWithRetry: retryable decides, code only labels', () => {
  it('a non-retryable failure stops after one attempt whatever max_retries says', async () => {
    const clock = createManualClock()
    let calls = 0
    const outcome = await runWithRetry(
      () => {
        calls += 1
        throw Object.assign(new Error('rate limited'), { retryable: false, code: 'rate_limited' })
      },
      noTimeout(50),
      { clock },
    )
    expect(calls).toBe(1)
    expect(outcome).toMatchObject({ ok: false, reason: 'terminal', failure: { retryable: false, code: 'rate_limited' } })
    expect(outcome.attempts).toHaveLength(1)
    expect(outcome.attempts[0]?.delayBeforeNextMs).toBeUndefined()
  })

  it('a failure without retryable: true is terminal, whatever its code says', async () => {
    for (const thrown of [new Error('plain'), 'a string', { retryable: 'yes', code: 'deadline_exceeded' }, null]) {
      const outcome = await runWithRetry(() => Promise.reject(thrown), noTimeout(5), { clock: createManualClock() })
      expect(outcome).toMatchObject({ ok: false, reason: 'terminal' })
      expect(outcome.attempts).toHaveLength(1)
    }
  })

  it('a retryable failure with max_retries: 1 runs once (max_retries caps total attempts)', async () => {
    let calls = 0
    const outcome = await runWithRetry(
      async () => {
        calls += 1
        throw retryable503()
      },
      noTimeout(1),
      { clock: createManualClock() },
    )
    expect(calls).toBe(1)
    expect(outcome).toMatchObject({ ok: false, reason: 'exhausted' })
  })

  it('stops at the first success and returns its value', async () => {
    const clock = createManualClock()
    let calls = 0
    const running = runWithRetry(
      async ({ attempt }) => {
        calls += 1
        if (attempt < 3) throw retryable503()
        return { answer: 42 }
      },
      noTimeout(5),
      { clock },
    )
    await clock.runUntilIdle()
    const outcome = await running
    expect(outcome).toMatchObject({ ok: true, value: { answer: 42 }, reason: 'succeeded' })
    expect(calls).toBe(3)
    expect(outcome.attempts.map((record) => record.outcome)).toEqual(['failed', 'failed', 'succeeded'])
  })

  it('accepts the seed failure shape thrown as a plain object', async () => {
    const clock = createManualClock()
    const running = runWithRetry(
      ({ attempt }) => {
        if (attempt === 1) throw { error: 'upstream 503', retryable: true, code: 'provider_error' }
        return 'done'
      },
      noTimeout(2),
      { clock },
    )
    await clock.runUntilIdle()
    expect(await running).toMatchObject({ ok: true, value: 'done' })
  })

  it('backoff_base_secs: 0 is valid and means no wait', async () => {
    const clock = createManualClock()
    let calls = 0
    const outcome = await runWithRetry(
      () => {
        calls += 1
        throw retryable503()
      },
      noTimeout(4, 0, 60),
      { clock },
    )
    expect(calls).toBe(4)
    expect(clock.now()).toBe(0)
    expect(outcome.attempts.map((record) => record.delayBeforeNextMs)).toEqual([0, 0, 0, undefined])
  })
})

describe('runWithRetry: timeouts', () => {
  it('a timeout is recorded as deadline_exceeded, is retryable, and is retried', async () => {
    const clock = createManualClock()
    const signals: AbortSignal[] = []
    const running = runWithRetry(
      ({ attempt, signal }) => {
        signals.push(signal)
        return attempt === 1 ? never<string>() : Promise.resolve('second time lucky')
      },
      seedExample,
      { clock },
    )
    await clock.advance(29_999)
    expect(signals[0]?.aborted).toBe(false)
    await clock.advance(1)
    expect(signals[0]?.aborted).toBe(true)
    expect((signals[0]?.reason as DOMException).name).toBe('TimeoutError')
    await clock.runUntilIdle()
    const outcome = await running
    expect(outcome).toMatchObject({ ok: true, value: 'second time lucky' })
    const [first, second] = outcome.attempts
    expect(first).toMatchObject({
      outcome: 'timed-out',
      startedAt: 0,
      endedAt: 30_000,
      deadline: 30_000,
      failure: { retryable: true, code: 'deadline_exceeded' },
      delayBeforeNextMs: 2_000,
      lateResultDiscarded: true,
    })
    expect(second).toMatchObject({ outcome: 'succeeded', startedAt: 32_000 })
  })

  it('an attempt that ignores its abort signal cannot hold the loop past its deadline; its late result is discarded and reported', async () => {
    const clock = createManualClock()
    const late: LateResult[] = []
    let releaseFirst: (value: string) => void = () => undefined
    const running = runWithRetry(
      ({ attempt }) =>
        attempt === 1 ? new Promise<string>((resolve) => (releaseFirst = resolve)) : Promise.resolve('from attempt 2'),
      { timeout_secs: 1, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 },
      { clock, onLateResult: (result) => late.push(result) },
    )
    await clock.advance(1_000)
    const outcome = await running
    expect(outcome).toMatchObject({ ok: true, value: 'from attempt 2' })
    await clock.advance(500)
    releaseFirst('too late')
    await clock.flush()
    expect(late).toEqual([{ attempt: 1, settledAt: 1_500, outcome: 'succeeded', endedBy: 'timed-out' }])
    expect(outcome.attempts[0]).toMatchObject({ outcome: 'timed-out', lateResultDiscarded: true })
  })

  it('a late rejection is reported as a failure and never becomes an unhandled rejection', async () => {
    const clock = createManualClock()
    const late: LateResult[] = []
    let rejectFirst: (error: unknown) => void = () => undefined
    const running = runWithRetry(
      () => new Promise<string>((_resolve, reject) => (rejectFirst = reject)),
      { timeout_secs: 1, max_retries: 1, backoff_base_secs: 0, backoff_max_secs: 0 },
      { clock, onLateResult: (result) => late.push(result) },
    )
    await clock.advance(1_000)
    expect(await running).toMatchObject({ ok: false, reason: 'exhausted', failure: { code: 'deadline_exceeded' } })
    rejectFirst(retryable503())
    await clock.flush()
    expect(late).toMatchObject([{ attempt: 1, outcome: 'failed', failure: { error: 'upstream 503' } }])
  })

  it('ignores an onLateResult hook that throws, so a late answer can never end the process', async () => {
    const clock = createManualClock()
    let calls = 0
    let releaseFirst: (value: string) => void = () => undefined
    const running = runWithRetry(
      () => new Promise<string>((resolve) => (releaseFirst = resolve)),
      { timeout_secs: 1, max_retries: 1, backoff_base_secs: 0, backoff_max_secs: 0 },
      {
        clock,
        // As a journal that can no longer be written throws when the late answer is logged.
        onLateResult: () => {
          calls += 1
          throw new Error('the journal accepts no more lines')
        },
      },
    )
    await clock.advance(1_000)
    expect(await running).toMatchObject({ ok: false, failure: { code: 'deadline_exceeded' } })
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason)
    }
    process.on('unhandledRejection', onUnhandled)
    try {
      releaseFirst('too late')
      await clock.flush()
      await new Promise((resolve) => setImmediate(resolve))
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
    expect(calls).toBe(1)
    expect(unhandled).toEqual([])
  })

  it('a synchronous result that arrives after the deadline counts as timed out', async () => {
    // A clock whose time jumps while the synchronous operation runs, as a busy CPU would make it.
    let busyMs = 0
    const manual = createManualClock()
    const clock = { now: () => manual.now() + busyMs, sleep: manual.sleep }
    const outcome = await runWithRetry(
      () => {
        busyMs += 5_000
        return 'slow but synchronous'
      },
      { timeout_secs: 1, max_retries: 1, backoff_base_secs: 0, backoff_max_secs: 0 },
      { clock },
    )
    expect(outcome).toMatchObject({ ok: false, reason: 'exhausted', failure: { code: 'deadline_exceeded' } })
  })

  it('a null timeout waits forever: no deadline and no timer', async () => {
    const clock = createManualClock()
    let release: (value: string) => void = () => undefined
    const running = runWithRetry(() => new Promise<string>((resolve) => (release = resolve)), noTimeout(1), { clock })
    await clock.flush()
    expect(clock.pendingSleeps()).toEqual([])
    await clock.advance(365 * 24 * 3_600_000)
    release('eventually')
    expect(await running).toMatchObject({ ok: true, value: 'eventually', attempts: [{ deadline: null }] })
  })

  it('on the system clock, times out on a plain timer and leaves no timer behind', async () => {
    vi.useFakeTimers()
    const running = runWithRetry(
      ({ attempt }) => (attempt === 1 ? never<string>() : Promise.resolve('ok')),
      { timeout_secs: 5, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 },
    )
    await vi.advanceTimersByTimeAsync(4_999)
    expect(vi.getTimerCount()).toBe(1)
    await vi.advanceTimersByTimeAsync(1)
    const outcome = await running
    expect(outcome).toMatchObject({ ok: true, attempts: [{ outcome: 'timed-out' }, { outcome: 'succeeded' }] })
    expect(vi.getTimerCount()).toBe(0)
  })

  it('clears the deadline timer once the attempt settles', async () => {
    const clock = createManualClock()
    await runWithRetry(() => Promise.resolve(1), seedExample, { clock })
    expect(clock.pendingSleeps()).toEqual([])
  })
})

describe('runWithRetry: cancellation', () => {
  it('cancellation during a backoff wait settles promptly as cancelled, without another attempt', async () => {
    const clock = createManualClock()
    const controller = new AbortController()
    let calls = 0
    const running = runWithRetry(
      () => {
        calls += 1
        throw retryable503()
      },
      seedExample,
      { clock, signal: controller.signal },
    )
    await clock.advance(1_000)
    expect(clock.pendingSleeps()).toEqual([{ wakeAt: 2_000, ms: 2_000 }])
    controller.abort(new Error('operator pressed stop'))
    const outcome = await running
    expect(clock.now()).toBe(1_000)
    expect(calls).toBe(1)
    expect(outcome).toMatchObject({ ok: false, reason: 'cancelled', failure: { retryable: false } })
    if (!outcome.ok) expect(outcome.failure.error).toBe('cancelled by the caller while waiting 2000 ms before attempt 2')
    expect(outcome.attempts).toHaveLength(1)
    expect(clock.pendingSleeps()).toEqual([])
  })

  it('cancellation during an attempt aborts its signal with the caller reason and settles at once', async () => {
    const clock = createManualClock()
    const controller = new AbortController()
    let seen: AbortSignal | undefined
    const running = runWithRetry(
      ({ signal }) => {
        seen = signal
        return never<string>()
      },
      seedExample,
      { clock, signal: controller.signal },
    )
    await clock.flush()
    const reason = new Error('stop')
    controller.abort(reason)
    const outcome = await running
    expect(seen?.aborted).toBe(true)
    expect(seen?.reason).toBe(reason)
    expect(outcome).toMatchObject({ ok: false, reason: 'cancelled', attempts: [{ outcome: 'cancelled', lateResultDiscarded: true }] })
    expect(clock.pendingSleeps()).toEqual([])
  })

  it('an already aborted signal runs no attempt at all', async () => {
    let calls = 0
    const outcome = await runWithRetry(() => (calls += 1), seedExample, { signal: AbortSignal.abort('gone') })
    expect(calls).toBe(0)
    expect(outcome).toMatchObject({ ok: false, reason: 'cancelled', attempts: [], failure: { cause: 'gone' } })
  })

  it('with no timeout, the attempt receives the caller signal itself', async () => {
    const controller = new AbortController()
    let seen: AbortSignal | undefined
    await runWithRetry(({ signal }) => (seen = signal), noTimeout(1), { signal: controller.signal })
    expect(seen).toBe(controller.signal)
  })

  it('with no timeout and no caller signal, each attempt that asks gets its own signal that never aborts', async () => {
    const clock = createManualClock()
    const signals: AbortSignal[] = []
    const running = runWithRetry(
      (context: AttemptContext) => {
        signals.push(context.signal)
        if (context.attempt === 1) throw retryable503()
        return 'ok'
      },
      noTimeout(2),
      { clock },
    )
    await clock.runUntilIdle()
    await running
    expect(signals).toHaveLength(2)
    expect(signals[0]).not.toBe(signals[1])
    expect(signals.every((signal) => !signal.aborted)).toBe(true)
  })
})

describe('runWithRetry: observers and overrides', () => {
  it('onAttemptStart fires before each attempt and onAttempt after it, with the complete record', async () => {
    const clock = createManualClock()
    const events: string[] = []
    const running = runWithRetry(
      ({ attempt }) => {
        events.push(`run ${attempt}`)
        if (attempt === 1) throw retryable503()
        return 'ok'
      },
      seedExample,
      {
        clock,
        onAttemptStart: (start: AttemptStart) => events.push(`start ${start.attempt} deadline ${String(start.deadline)}`),
        onAttempt: (record: AttemptRecord) => events.push(`end ${record.attempt} ${record.outcome} ${String(record.delayBeforeNextMs)}`),
      },
    )
    await clock.runUntilIdle()
    await running
    expect(events).toEqual(['start 1 deadline 30000', 'run 1', 'end 1 failed 2000', 'start 2 deadline 32000', 'run 2', 'end 2 succeeded undefined'])
  })

  it('shouldRetry overrides the retryable flag both ways, but never past max_retries', async () => {
    const clock = createManualClock()
    let calls = 0
    const vetoed = await runWithRetry(
      () => {
        calls += 1
        throw retryable503()
      },
      noTimeout(5, 0),
      { clock, shouldRetry: () => false },
    )
    expect(calls).toBe(1)
    expect(vetoed.reason).toBe('terminal')

    calls = 0
    const forced = await runWithRetry(
      () => {
        calls += 1
        throw new Error('not marked retryable')
      },
      noTimeout(3, 0),
      { clock, shouldRetry: (failure, record) => !failure.retryable && record.outcome === 'failed' },
    )
    expect(calls).toBe(3)
    expect(forced.reason).toBe('exhausted')
  })

  it('rejects when an observer throws, so a journal that cannot record stops the loop', async () => {
    const boom = new Error('journal disk full')
    await expect(
      runWithRetry(() => 1, noTimeout(1), {
        onAttempt: () => {
          throw boom
        },
      }),
    ).rejects.toBe(boom)
  })
})

describe('runWithRetry: bad input', () => {
  it('rejects a bad policy with a RetryPolicyError naming the field, before running anything', async () => {
    let calls = 0
    const policy = { timeout_secs: null, max_retries: 0, backoff_base_secs: 2, backoff_max_secs: 60 }
    const error: unknown = await runWithRetry(() => (calls += 1), policy).catch((caught: unknown) => caught)
    expect(isRetryPolicyError(error)).toBe(true)
    expect(error).toMatchObject({ field: 'max_retries', message: expect.stringContaining('max_retries must be an integer >= 1, got 0') })
    expect(calls).toBe(0)
  })

  it('rejects an operation that is not a function and an unknown jitter mode with a RetryOptionsError', async () => {
    const notAFunction = 'run me' as unknown as () => number
    await expect(runWithRetry(notAFunction, noTimeout(1))).rejects.toSatisfy(isRetryOptionsError)
    const jitter = 'loud' as unknown as 'none'
    await expect(runWithRetry(() => 1, noTimeout(1), { jitter })).rejects.toMatchObject({ field: 'jitter' })
  })
})

describe('runWithRetry: jitter and the shared budget', () => {
  it('jitter "full" and "equal" spread the delay within their bounds; "none" is the exact formula', async () => {
    for (const [jitter, expected] of [
      ['none', [2_000, 4_000]],
      ['full', [500, 1_000]],
      ['equal', [1_250, 2_500]],
    ] as const) {
      const clock = createManualClock()
      const running = runWithRetry(
        () => {
          throw retryable503()
        },
        noTimeout(3),
        { clock, jitter, random: () => 0.25 },
      )
      await clock.runUntilIdle()
      const outcome = await running
      expect(outcome.attempts.map((record) => record.delayBeforeNextMs).slice(0, 2)).toEqual(expected)
    }
  })

  it('a shared budget stops a fan-out from multiplying retries; first attempts never draw from it', async () => {
    const clock = createManualClock()
    const budget = createRetryBudget({ capacity: 3, refillPerSecond: 0, clock })
    let calls = 0
    const runs = Array.from({ length: 10 }, () =>
      runWithRetry(
        () => {
          calls += 1
          throw retryable503()
        },
        noTimeout(5, 0),
        { clock, budget },
      ),
    )
    const outcomes = await Promise.all(runs)
    expect(calls).toBe(10 + 3)
    expect(outcomes.filter((outcome) => !outcome.ok && outcome.budgetDenied === true)).toHaveLength(outcomes.length)
    expect(budget.available()).toBe(0)
  })
})

describe('runWithRetry: properties', () => {
  const policyArbitrary = fc.record({
    timeout_secs: fc.constantFrom(null, 1, 30),
    max_retries: fc.integer({ min: 1, max: 8 }),
    backoff_base_secs: fc.oneof(fc.constant(0), fc.double({ min: 1, max: 10, noNaN: true })),
    backoff_max_secs: fc.double({ min: 0, max: 600, noNaN: true }),
  })
  const stepArbitrary = fc.constantFrom('retryable', 'terminal', 'success', 'hang', 'sync-retryable')

  it('attempts never exceed max_retries, and each stop reason matches the last attempt', async () => {
    await fc.assert(
      fc.asyncProperty(policyArbitrary, fc.array(stepArbitrary, { minLength: 1, maxLength: 10 }), async (policy, steps) => {
        const clock = createManualClock()
        const running = runWithRetry(
          async ({ attempt }) => {
            const step = steps[(attempt - 1) % steps.length]
            if (step === 'success') return attempt
            if (step === 'hang') return policy.timeout_secs === null ? attempt : never<number>()
            if (step === 'terminal') throw new CallError('refused', { retryable: false, code: 'refused' })
            throw retryable503()
          },
          policy,
          { clock },
        )
        await clock.runUntilIdle()
        const outcome = await running
        expect(outcome.attempts.length).toBeGreaterThanOrEqual(1)
        expect(outcome.attempts.length).toBeLessThanOrEqual(policy.max_retries)
        const last = outcome.attempts.at(-1)!
        if (outcome.ok) expect(last.outcome).toBe('succeeded')
        else if (outcome.reason === 'terminal') expect(last.failure?.retryable).toBe(false)
        else expect(outcome.attempts).toHaveLength(policy.max_retries)
      }),
      { numRuns: 150 },
    )
  })

  it('the recorded delays equal min(base ** n, max) for the n-th retry', async () => {
    await fc.assert(
      fc.asyncProperty(policyArbitrary, async (policy) => {
        const clock = createManualClock()
        const running = runWithRetry(
          () => {
            throw retryable503()
          },
          { ...policy, timeout_secs: null },
          { clock },
        )
        await clock.runUntilIdle()
        const outcome = await running
        expect(outcome.attempts).toHaveLength(policy.max_retries)
        outcome.attempts.forEach((record, index) => {
          const n = index + 1
          const expected = n < policy.max_retries ? Math.min(policy.backoff_base_secs ** n, policy.backoff_max_secs) * 1000 : undefined
          expect(record.delayBeforeNextMs).toBe(expected)
          if (expected !== undefined) expect(expected).toBe(backoffDelaySecs(n, policy) * 1000)
        })
        const nextStart = outcome.attempts.slice(1).map((record) => record.startedAt)
        const planned = outcome.attempts.slice(0, -1).map((record) => record.endedAt + (record.delayBeforeNextMs ?? 0))
        expect(nextStart).toEqual(planned)
      }),
      { numRuns: 150 },
    )
  })

  it('with jitter the delays stay within their bounds', async () => {
    await fc.assert(
      fc.asyncProperty(
        policyArbitrary,
        fc.constantFrom('full', 'equal'),
        fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1, maxLength: 8 }),
        async (policy, jitter, draws) => {
          const clock = createManualClock()
          let draw = 0
          const running = runWithRetry(
            () => {
              throw retryable503()
            },
            { ...policy, timeout_secs: null },
            { clock, jitter, random: () => draws[draw++ % draws.length]! },
          )
          await clock.runUntilIdle()
          const outcome = await running
          outcome.attempts.slice(0, -1).forEach((record, index) => {
            const ceiling = backoffDelaySecs(index + 1, policy) * 1000
            const floor = jitter === 'full' ? 0 : ceiling / 2
            expect(record.delayBeforeNextMs).toBeGreaterThanOrEqual(floor)
            expect(record.delayBeforeNextMs).toBeLessThanOrEqual(ceiling)
          })
        },
      ),
      { numRuns: 150 },
    )
  })
})

describe('runWithRetry: beforeAttempt', () => {
  it("is awaited before every attempt, and what it waits is no part of the attempt's timeout", async () => {
    const clock = createManualClock(0)
    const asked: number[] = []
    const starts: AttemptStart[] = []
    let calls = 0
    const pending = runWithRetry(
      () => {
        calls += 1
        if (calls === 1) throw retryable503()
        return 'ok'
      },
      { timeout_secs: 1, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 },
      {
        clock,
        // Room in a shared limit: 5 s of waiting before each attempt, five times the attempt's timeout.
        beforeAttempt: async (attempt) => {
          asked.push(attempt)
          await clock.sleep(5_000)
        },
        onAttemptStart: (start) => starts.push(start),
      },
    )
    const state = { settled: false }
    void pending.finally(() => (state.settled = true))
    // Each wait before an attempt runs to its end; a real tick lets the loop reach its next wait.
    while (!state.settled) if (!(await clock.advanceToNextSleep())) await new Promise((resolve) => setTimeout(resolve, 1))
    const outcome = await pending
    expect(outcome).toMatchObject({ ok: true, value: 'ok', reason: 'succeeded' })
    expect(asked).toEqual([1, 2])
    // Each attempt starts after its wait, its deadline a full second after its own start.
    expect(starts.map((start) => [start.startedAt, start.deadline])).toEqual([
      [5_000, 6_000],
      [10_000, 11_000],
    ])
  })

  it('a cancellation while it waits ends the loop as cancelled, with no attempt started', async () => {
    const controller = new AbortController()
    let attempts = 0
    const outcome = await runWithRetry(
      () => {
        attempts += 1
        return 'never'
      },
      noTimeout(3),
      {
        signal: controller.signal,
        beforeAttempt: () => {
          controller.abort()
        },
      },
    )
    expect(attempts).toBe(0)
    expect(outcome).toMatchObject({ ok: false, reason: 'cancelled', failure: { error: 'cancelled by the caller before the first attempt' } })
  })
})
