import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { accountPlan } from '../test/fixtures.js'
import { PartialInputError } from './partial-error.js'
import type { PlanStep } from './plan.js'
import { decideStepRetry, shouldRetryStep } from './should-retry-step.js'
import { FAILURE_CLASSES, toolFailed, toolFound } from './tool-result.js'

const invoices = accountPlan.steps[1]! // n: 2, required; two steps come after it
const paymentHistory = accountPlan.steps[2]! // n: 3, enriching
const correctable = toolFailed('correctable', 'bad date format')
const budget = (remaining: number) => ({ remainingSteps: () => remaining })

describe('shouldRetryStep', () => {
  it('retries a failed required step with a correctable failure when the budget covers the retry and the rest of the plan', () => {
    expect(shouldRetryStep(invoices, correctable, budget(3), accountPlan)).toBe(true)
  })

  it('refuses an enriching step, however much budget is left', () => {
    expect(decideStepRetry(paymentHistory, correctable, budget(100), accountPlan)).toEqual({ retry: false, reason: 'not-required' })
  })

  it('refuses a confirming step', () => {
    expect(shouldRetryStep(accountPlan.steps[3]!, correctable, budget(100), accountPlan)).toBe(false)
  })

  it('never retries an unavailable dependency on the request path', () => {
    expect(decideStepRetry(invoices, toolFailed('unavailable', '503'), budget(100), accountPlan)).toEqual({ retry: false, reason: 'unavailable' })
  })

  it.each(['forbidden', 'fatal'] as const)('refuses a %s failure: only correctable failures can go differently', (failureClass) => {
    expect(decideStepRetry(invoices, toolFailed(failureClass, 'no'), budget(100), accountPlan)).toEqual({ retry: false, reason: 'not-correctable' })
  })

  it('refuses a retry the budget cannot cover: the retry plus the two steps after it need three', () => {
    expect(decideStepRetry(invoices, correctable, budget(2), accountPlan)).toEqual({ retry: false, reason: 'budget' })
    expect(shouldRetryStep(invoices, correctable, budget(0), accountPlan)).toBe(false)
  })

  it('does not retry a step that succeeded', () => {
    expect(decideStepRetry(invoices, toolFound([]), budget(100), accountPlan)).toEqual({ retry: false, reason: 'succeeded' })
  })

  it('rejects a budget that does not report a finite number', () => {
    expect(() => shouldRetryStep(invoices, correctable, budget(Number.NaN), accountPlan)).toThrow(PartialInputError)
  })

  it('retries only when every condition holds (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...accountPlan.steps),
        fc.constantFrom(...FAILURE_CLASSES),
        fc.integer({ min: 0, max: 10 }),
        (step: PlanStep, failureClass, remaining) => {
          const stepsAfter = accountPlan.steps.filter((other) => other.n > step.n).length
          const expected = step.criticality === 'required' && failureClass === 'correctable' && remaining >= stepsAfter + 1
          expect(shouldRetryStep(step, toolFailed(failureClass, 'x'), budget(remaining), accountPlan)).toBe(expected)
        },
      ),
    )
  })
})
