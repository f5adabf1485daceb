import { describe, expect, it } from 'vitest'
import { PartialInputError } from './partial-error.js'
import { parsePlan } from './plan.js'

describe('parsePlan', () => {
  it('returns a valid plan as it is', () => {
    const plan = { steps: [{ n: 1, tool: 'get_contract', criticality: 'required' }] }
    expect(parsePlan(plan)).toBe(plan)
  })

  it('names the field and the allowed criticalities for an unknown one', () => {
    try {
      parsePlan({ steps: [{ n: 1, tool: 'x', criticality: 'optional' }] })
      expect.unreachable()
    } catch (error) {
      expect(PartialInputError.isInstance(error)).toBe(true)
      expect((error as PartialInputError).field).toBe('plan.steps[0].criticality')
      expect((error as Error).message).toMatch(/required, enriching or confirming/)
    }
  })

  it('keeps the zod error as cause', () => {
    try {
      parsePlan({ steps: 'nope' })
      expect.unreachable()
    } catch (error) {
      expect((error as Error).cause).toBeDefined()
    }
  })
})
