import { describe, expect, it } from 'vitest'
import {
  ERROR_CODES,
  ErrorCodeSchema,
  FAILURE_CAUSES,
  FAILURE_STATUSES,
  FailureCauseSchema,
  isErrorCode,
  isFailureCause,
  isFailureStatus,
} from './vocabulary.js'

describe('failure vocabulary', () => {
  it('holds the fifteen agent failure causes', () => {
    expect(FAILURE_CAUSES).toHaveLength(16)
    expect(new Set(FAILURE_CAUSES).size).toBe(16)
    for (const cause of ['host-turn-timeout', 'call-timeout', 'sdk-unavailable', 'unclassified', 'prompt-not-dispatched']) {
      expect(isFailureCause(cause)).toBe(true)
    }
    expect(isFailureCause('timeout')).toBe(false)
  })

  it('holds the five error codes and the three failure statuses', () => {
    expect([...ERROR_CODES].sort()).toEqual(['budget_exceeded', 'deadline_exceeded', 'provider_error', 'rate_limited', 'refused'])
    expect([...FAILURE_STATUSES]).toEqual(['failed', 'blocked', 'cancelled'])
    expect(isErrorCode('rate_limited')).toBe(true)
    expect(isErrorCode('rate-limited')).toBe(false)
    expect(isFailureStatus('error')).toBe(false)
  })

  it('validates with zod enums that name the allowed values', () => {
    expect(FailureCauseSchema.parse('call-timeout')).toBe('call-timeout')
    const result = ErrorCodeSchema.safeParse('timeout')
    expect(result.success).toBe(false)
    expect(result.error?.issues[0]?.message).toMatch(/deadline_exceeded/)
  })
})
