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

describe('shouldRetryStep: the money rule', () => {
  // The retry of step 2 may cost $0.40; steps 3 and 4 after it $0.25 and $0.10: $0.75 in all.
  const priced = {
    steps: [
      { n: 1, tool: 'get_contract', criticality: 'required', estimatedUsd: '0.30' },
      { n: 2, tool: 'get_invoices', criticality: 'required', estimatedUsd: '0.40' },
      { n: 3, tool: 'get_payment_history', criticality: 'enriching', estimatedUsd: '0.25' },
      { n: 4, tool: 'check_limits', criticality: 'confirming', estimatedUsd: '0.10' },
    ],
  } as const
  const retried = priced.steps[1]
  const withMoney = (usd: string) => ({ remainingSteps: () => 10, remainingUsd: () => usd })

  it('retries only when the money left covers the retry and the estimate of the rest of the plan, to the cent-fraction', () => {
    expect(decideStepRetry(retried, correctable, withMoney('0.75'), priced)).toEqual({ retry: true })
    expect(decideStepRetry(retried, correctable, withMoney('0.749999'), priced)).toEqual({ retry: false, reason: 'cost-budget' })
    // Without a money budget the estimates are not read.
    expect(decideStepRetry(retried, correctable, budget(10), priced)).toEqual({ retry: true })
  })

  it('holds for any estimates and money left (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 1_000_000 }), { minLength: 2, maxLength: 6 }), fc.integer({ min: 0, max: 6_000_000 }), (micros, leftMicros) => {
        const plan = { steps: micros.map((cost, index) => ({ n: index + 1, tool: `t${index}`, criticality: 'required' as const, estimatedUsd: (cost / 1_000_000).toFixed(6) })) }
        const needed = micros.slice(1).reduce((sum, cost) => sum + cost, 0)
        const decision = decideStepRetry(plan.steps[1]!, correctable, withMoney((leftMicros / 1_000_000).toFixed(6)), plan)
        expect(decision.retry).toBe(leftMicros >= needed)
      }),
    )
  })

  it('refuses money left that is not a decimal string, naming the budget', () => {
    expect(() => decideStepRetry(retried, correctable, withMoney('lots'), priced)).toThrow(PartialInputError)
  })
})
