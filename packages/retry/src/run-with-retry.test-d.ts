import type { ErrorCode, FailureCause } from '@locus/outcome'
import { describe, expectTypeOf, it } from 'vitest'
import type { AttemptRecord, RetryOutcome, RetryStopReason } from './attempt.js'
import type { CallFailure } from './call-failure.js'
import type { RetryPolicy } from './retry-policy.js'
import { runWithRetry } from './run-with-retry.js'
import { TRANSPORT_RETRYABLE_CAUSES } from './transport-retry.js'

declare const policy: RetryPolicy

describe('runWithRetry types', () => {
  it('infers the value type from the operation, async or not', () => {
    expectTypeOf(runWithRetry(async () => 42, policy)).resolves.toEqualTypeOf<RetryOutcome<number>>()
    expectTypeOf(runWithRetry(() => 'sync', policy)).resolves.toEqualTypeOf<RetryOutcome<string>>()
  })

  it('narrows the outcome on ok', () => {
    const outcome = {} as RetryOutcome<number>
    if (outcome.ok) {
      expectTypeOf(outcome.value).toEqualTypeOf<number>()
      expectTypeOf(outcome.reason).toEqualTypeOf<'succeeded'>()
    } else {
      expectTypeOf(outcome.failure).toEqualTypeOf<CallFailure>()
      expectTypeOf(outcome.reason).toEqualTypeOf<'terminal' | 'exhausted' | 'cancelled'>()
    }
    expectTypeOf(outcome.attempts).toEqualTypeOf<AttemptRecord[]>()
  })

  it('keeps the seed vocabulary closed', () => {
    expectTypeOf<RetryStopReason>().toEqualTypeOf<'succeeded' | 'terminal' | 'exhausted' | 'cancelled'>()
    expectTypeOf<CallFailure['code']>().toEqualTypeOf<ErrorCode | undefined>()
    expectTypeOf(TRANSPORT_RETRYABLE_CAUSES).toEqualTypeOf<readonly ['host-turn-timeout', 'call-timeout']>()
    expectTypeOf<(typeof TRANSPORT_RETRYABLE_CAUSES)[number]>().toExtend<FailureCause>()
    expectTypeOf<RetryPolicy['timeout_secs']>().toEqualTypeOf<number | null>()
  })
})
