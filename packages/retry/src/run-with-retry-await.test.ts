import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { AttemptRecord } from './attempt.js'
import { CallError } from './call-error.js'
import { createManualClock } from './manual-clock.js'
import { isRetryOptionsError } from './retry-options-error.js'
import type { RetryPolicy } from './retry-policy.js'
import { runWithRetry } from './run-with-retry.js'

const policy = (timeout_secs: number | null, max_retries: number): RetryPolicy => ({ timeout_secs, max_retries, backoff_base_secs: 0, backoff_max_secs: 0 })

/** An attempt that honours its signal: when it aborts, it spends `cleanupMs` on the clock and then throws its own failure. */
function politeAttempt(clock: ReturnType<typeof createManualClock>, cleanupMs: number, events: string[]) {
  return async ({ attempt, signal }: { attempt: number; signal: AbortSignal }): Promise<string> => {
    events.push(`start ${attempt} @${clock.now()}`)
    await new Promise<void>((resolve) => {
      signal.addEventListener('abort', () => { resolve() }, { once: true })
    })
    events.push(`aborted ${attempt} (${(signal.reason as DOMException).name}) @${clock.now()}`)
    await clock.sleep(cleanupMs)
    events.push(`cleaned ${attempt} @${clock.now()}`)
    throw new CallError(`attempt ${attempt} gave up`, { retryable: true, code: 'provider_error' })
  }
}

describe("runWithRetry atDeadline: 'await'", () => {
  it('waits for a timed-out attempt to clean up before the next starts, and keeps its own failure', async () => {
    const clock = createManualClock(0)
    const events: string[] = []
    const records: AttemptRecord[] = []
    const running = runWithRetry(politeAttempt(clock, 50, events), policy(1, 2), { clock, atDeadline: 'await', onAttempt: (record) => records.push(record) })
    await clock.runUntilIdle()
    const outcome = await running
    expect(events).toEqual([
      'start 1 @0',
      'aborted 1 (TimeoutError) @1000',
      'cleaned 1 @1050',
      'start 2 @1050',
      'aborted 2 (TimeoutError) @2050',
      'cleaned 2 @2100',
    ])
    expect(outcome).toMatchObject({ ok: false, reason: 'exhausted', failure: { error: 'attempt 2 gave up', code: 'provider_error' } })
    expect(records.map((record) => [record.outcome, record.endedAt, record.failure?.error, record.lateResultDiscarded])).toEqual([
      ['timed-out', 1050, 'attempt 1 gave up', undefined],
      ['timed-out', 2100, 'attempt 2 gave up', undefined],
    ])
  })

  it('under the default, the same attempt is abandoned at its deadline and replaced by deadline_exceeded', async () => {
    const clock = createManualClock(0)
    const events: string[] = []
    const running = runWithRetry(politeAttempt(clock, 50, events), policy(1, 2), { clock })
    await clock.runUntilIdle()
    const outcome = await running
    expect(events.indexOf('start 2 @1000')).toBeGreaterThan(-1)
    expect(outcome.attempts[0]).toMatchObject({ outcome: 'timed-out', lateResultDiscarded: true, failure: { code: 'deadline_exceeded' } })
  })

  it('lets a value an attempt returns after its deadline stand', async () => {
    const clock = createManualClock(0)
    const running = runWithRetry(
      async ({ signal }) => {
        await clock.sleep(1500)
        return signal.aborted ? 'late but kept' : 'early'
      },
      policy(1, 3),
      { clock, atDeadline: 'await' },
    )
    await clock.runUntilIdle()
    expect(await running).toMatchObject({ ok: true, value: 'late but kept', attempts: [{ outcome: 'succeeded', endedAt: 1500 }] })
  })

  it('on a cancellation, aborts the attempt with the caller reason, waits for it, and stops as cancelled', async () => {
    const clock = createManualClock(0)
    const caller = new AbortController()
    const events: string[] = []
    let reason: unknown
    const running = runWithRetry(
      async ({ signal }) => {
        await new Promise<void>((resolve) => {
          signal.addEventListener('abort', () => { resolve() }, { once: true })
        })
        reason = signal.reason
        await clock.sleep(10)
        events.push(`cleaned @${clock.now()}`)
        throw new Error('stopped')
      },
      policy(null, 5),
      { clock, signal: caller.signal, atDeadline: 'await' },
    )
    void running
    caller.abort('user pressed stop')
    await clock.runUntilIdle()
    const outcome = await running
    expect(reason).toBe('user pressed stop')
    expect(events).toEqual(['cleaned @10'])
    expect(outcome).toMatchObject({ ok: false, reason: 'cancelled' })
    expect(outcome.attempts).toEqual([expect.objectContaining({ outcome: 'cancelled', endedAt: 10 })])
    expect(outcome.attempts[0]).not.toHaveProperty('lateResultDiscarded')
  })

  it('refuses an unknown atDeadline naming the field', async () => {
    const error = await runWithRetry(() => 1, policy(null, 1), { atDeadline: 'later' as 'await' }).catch((caught: unknown) => caught)
    expect(isRetryOptionsError(error)).toBe(true)
    expect(error).toMatchObject({ field: 'atDeadline' })
  })
})

describe('runWithRetry: a timeout given in seconds is an exact number of milliseconds', () => {
  it('sets each deadline exactly timeout_secs * 1000 after the attempt starts, for any whole number of milliseconds', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 1e9 }), async (ms) => {
        const clock = createManualClock(7)
        const outcome = await runWithRetry(() => 'done', policy(ms / 1000, 1), { clock })
        expect(outcome.attempts[0]?.deadline).toBe(7 + ms)
      }),
      { numRuns: 300 },
    )
  })
})
