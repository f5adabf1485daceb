import { describe, expect, it } from 'vitest'
import { CallError } from './call-error.js'
import { createManualClock } from './manual-clock.js'
import { createRetryBudget } from './retry-budget.js'
import { runWithRetry } from './run-with-retry.js'

const failing = (): never => {
  throw new CallError('upstream 503', { retryable: true, code: 'provider_error' })
}

// The policy: three attempts, one second apart.
const policy = { timeout_secs: null, max_retries: 3, backoff_base_secs: 1, backoff_max_secs: 60 }

describe('runWithRetry: retryDeadline (no retry starts at or after it)', () => {
  it('refuses at once a retry whose backoff would end past the deadline, without sleeping', async () => {
    const clock = createManualClock()
    const starts: number[] = []
    const outcome = await runWithRetry(failing, policy, { clock, retryDeadline: 50, onAttemptStart: ({ startedAt }) => starts.push(startedAt) })
    expect(outcome).toMatchObject({ ok: false, reason: 'exhausted', deadlineDenied: true, deniedDelayMs: 1000 })
    expect(starts).toEqual([0])
    // Nothing slept: the refusal did not wait out a backoff it already knew was too long.
    expect(clock.now()).toBe(0)
    expect(clock.pendingSleeps()).toEqual([])
    expect(outcome.attempts.at(-1)).toMatchObject({ retryDenied: 'deadline', deniedDelayMs: 1000 })
    expect(outcome.attempts.at(-1)?.delayBeforeNextMs).toBeUndefined()
  })

  it('lets retries that start before the deadline run, and refuses the first that would not', async () => {
    const clock = createManualClock()
    const starts: number[] = []
    const running = runWithRetry(failing, policy, { clock, retryDeadline: 1_500, onAttemptStart: ({ startedAt }) => starts.push(startedAt) })
    await clock.runUntilIdle()
    const outcome = await running
    expect(starts).toEqual([0, 1_000])
    expect(outcome).toMatchObject({ ok: false, reason: 'exhausted', deadlineDenied: true, deniedDelayMs: 1_000 })
    expect(clock.now()).toBe(1_000)
  })

  it('counts a retry due exactly at the deadline as past it', async () => {
    const clock = createManualClock()
    const outcome = await runWithRetry(failing, policy, { clock, retryDeadline: 1_000 })
    expect(outcome).toMatchObject({ deadlineDenied: true })
    expect(outcome.attempts).toHaveLength(1)
  })

  it('does not spend a token of the shared budget on a retry the deadline refused', async () => {
    const clock = createManualClock()
    const budget = createRetryBudget({ capacity: 2, refillPerSecond: 0, clock })
    const outcome = await runWithRetry(failing, policy, { clock, budget, retryDeadline: 10 })
    expect(outcome).toMatchObject({ deadlineDenied: true })
    expect(outcome).not.toHaveProperty('budgetDenied')
    expect(budget.available()).toBe(2)
  })

  it('reports the backoff a budget refused', async () => {
    const clock = createManualClock()
    const budget = createRetryBudget({ capacity: 1, refillPerSecond: 0, clock })
    budget.tryWithdraw()
    const outcome = await runWithRetry(failing, policy, { clock, budget })
    expect(outcome).toMatchObject({ ok: false, reason: 'exhausted', budgetDenied: true, deniedDelayMs: 1_000 })
    expect(outcome).not.toHaveProperty('deadlineDenied')
    expect(outcome.attempts.at(-1)).toMatchObject({ retryDenied: 'budget', deniedDelayMs: 1_000 })
  })

  it('refuses a retryDeadline that is not a number', async () => {
    await expect(runWithRetry(failing, policy, { retryDeadline: '50' as unknown as number })).rejects.toMatchObject({
      code: 'RETRY_OPTIONS_INVALID',
      field: 'retryDeadline',
    })
  })
})
