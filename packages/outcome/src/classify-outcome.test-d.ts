import { describe, expectTypeOf, it } from 'vitest'
import { classifyOutcome, type OutcomeFailureReason } from './classify-outcome.js'
import type { ErrorCode, FailureCause, FailureStatus } from './vocabulary.js'

describe('vocabulary types', () => {
  it('derives closed unions from the arrays', () => {
    expectTypeOf<FailureStatus>().toEqualTypeOf<'failed' | 'blocked' | 'cancelled'>()
    expectTypeOf<ErrorCode>().toEqualTypeOf<
      'provider_error' | 'rate_limited' | 'refused' | 'budget_exceeded' | 'deadline_exceeded'
    >()
    expectTypeOf<'call-timeout'>().toExtend<FailureCause>()
    expectTypeOf<'timeout'>().not.toExtend<FailureCause>()
    expectTypeOf<OutcomeFailureReason>().toEqualTypeOf<'ok-false' | 'partial' | 'status'>()
  })

  it('narrows the classification on failed', () => {
    const result = classifyOutcome({})
    if (result.failed) {
      expectTypeOf(result.reasons[0]).toEqualTypeOf<OutcomeFailureReason>()
      expectTypeOf(result.status).toEqualTypeOf<FailureStatus | undefined>()
    } else {
      expectTypeOf(result.reasons).toEqualTypeOf<readonly []>()
    }
  })
})
