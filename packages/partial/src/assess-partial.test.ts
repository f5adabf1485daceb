import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { accountPlan, runMissingRequired, runWithGaps } from '../test/fixtures.js'
import { assessPartial } from './assess-partial.js'
import { NOT_REACHED } from './gap.js'
import { PartialInputError } from './partial-error.js'
import type { Plan, PlanStep } from './plan.js'
import { STEP_CRITICALITIES } from './step-criticality.js'
import { type ToolResult, toolEmpty, toolFailed, toolFound } from './tool-result.js'

describe('assessPartial', () => {
  it('cannot_answer lists the missing required tool when a required step failed, even with enriching successes', () => {
    const run = runMissingRequired()
    const assessment = assessPartial(run.plan, run.results)
    expect(assessment).toMatchObject({ kind: 'cannot_answer', answerable: false, missing: ['get_invoices'] })
  })

  it('cannot_answer when a required step was not reached, and the gap says "not reached"', () => {
    const assessment = assessPartial(accountPlan, new Map([[1, toolFound({})]]))
    expect(assessment.kind).toBe('cannot_answer')
    if (assessment.kind !== 'cannot_answer') return
    expect(assessment.missing).toEqual(['get_invoices'])
    expect(assessment.gaps.map((gap) => [gap.tool, gap.reason])).toEqual([
      ['get_invoices', NOT_REACHED],
      ['get_payment_history', NOT_REACHED],
      ['search_tickets', NOT_REACHED],
    ])
  })

  it('partial carries every gap with tool, criticality and reason when only non-required steps failed', () => {
    const run = runWithGaps()
    expect(assessPartial(run.plan, run.results)).toEqual({
      kind: 'partial',
      answerable: true,
      gaps: [
        {
          step: 3,
          tool: 'get_payment_history',
          criticality: 'enriching',
          reason: 'the finance system did not respond',
          description: 'the payment history',
        },
      ],
    })
  })

  it('complete when nothing failed; an empty result is not a gap', () => {
    const results = new Map<number, ToolResult>([
      [1, toolFound({})],
      [2, toolEmpty()],
      [3, toolEmpty(null)],
      [4, toolFound([1])],
    ])
    expect(assessPartial(accountPlan, results)).toEqual({ kind: 'complete', answerable: true, gaps: [] })
  })

  it('lists a missing required tool once even when two required steps use it', () => {
    const plan: Plan = {
      steps: [
        { n: 1, tool: 'lookup', criticality: 'required' },
        { n: 2, tool: 'lookup', criticality: 'required' },
      ],
    }
    const assessment = assessPartial(plan, new Map())
    expect(assessment).toMatchObject({ kind: 'cannot_answer', missing: ['lookup'] })
    expect(assessment.gaps).toHaveLength(2)
  })

  it('rejects a plan with two steps numbered alike, naming the field', () => {
    const plan = { steps: [accountPlan.steps[0]!, { ...accountPlan.steps[1]!, n: 1 }] }
    expect(() => assessPartial(plan, new Map())).toThrow(PartialInputError)
    try {
      assessPartial(plan, new Map())
    } catch (error) {
      expect(PartialInputError.isInstance(error) && error.field).toBe('plan.steps[1].n')
    }
  })

  it('rejects a malformed result instead of reading it as a gap or a success', () => {
    const results = new Map([[1, { ok: 'yes' } as unknown as ToolResult]])
    expect(() => assessPartial(accountPlan, results)).toThrow(/results\.get\(1\)\.ok/)
  })
})

const stepsArbitrary = fc
  .uniqueArray(
    fc.record({
      n: fc.integer({ min: 0, max: 50 }),
      tool: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
      criticality: fc.constantFrom(...STEP_CRITICALITIES),
    }),
    { selector: (step) => step.n, maxLength: 12 },
  )
  .map((steps): PlanStep[] => steps)

const resultArbitrary: fc.Arbitrary<ToolResult | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.constant(toolFound({ value: 1 })),
  fc.constant(toolEmpty()),
  fc.constantFrom('correctable', 'unavailable', 'forbidden', 'fatal' as const).map((failureClass) => toolFailed(failureClass, `${failureClass} failure`)),
)

const scenario = stepsArbitrary.chain((steps) =>
  fc.tuple(fc.constant(steps), fc.array(resultArbitrary, { minLength: steps.length, maxLength: steps.length })),
)

function toResults(steps: readonly PlanStep[], results: readonly (ToolResult | undefined)[]): Map<number, ToolResult> {
  const map = new Map<number, ToolResult>()
  steps.forEach((step, index) => {
    const result = results[index]
    if (result !== undefined) map.set(step.n, result)
  })
  return map
}

describe('assessPartial properties', () => {
  it('cannot_answer if and only if some required step is not ok', () => {
    fc.assert(
      fc.property(scenario, ([steps, results]) => {
        const map = toResults(steps, results)
        const requiredMissing = steps.some((step) => step.criticality === 'required' && map.get(step.n)?.ok !== true)
        expect(assessPartial({ steps }, map).kind === 'cannot_answer').toBe(requiredMissing)
      }),
    )
  })

  it('every failed or absent step appears as exactly one gap, and no successful step does', () => {
    fc.assert(
      fc.property(scenario, ([steps, results]) => {
        const map = toResults(steps, results)
        const gapSteps = assessPartial({ steps }, map).gaps.map((gap) => gap.step)
        const expected = steps.filter((step) => map.get(step.n)?.ok !== true).map((step) => step.n)
        expect(gapSteps).toEqual(expected)
      }),
    )
  })

  it('complete exactly when every step is ok, partial otherwise when nothing required is missing', () => {
    fc.assert(
      fc.property(scenario, ([steps, results]) => {
        const map = toResults(steps, results)
        const assessment = assessPartial({ steps }, map)
        const allOk = steps.every((step) => map.get(step.n)?.ok === true)
        if (allOk) expect(assessment.kind).toBe('complete')
        else if (assessment.kind !== 'cannot_answer') expect(assessment.kind).toBe('partial')
      }),
    )
  })

  it('missing names exactly the tools of the required gaps', () => {
    fc.assert(
      fc.property(scenario, ([steps, results]) => {
        const assessment = assessPartial({ steps }, toResults(steps, results))
        if (assessment.kind !== 'cannot_answer') return
        const requiredTools = new Set(assessment.gaps.filter((gap) => gap.criticality === 'required').map((gap) => gap.tool))
        expect(new Set(assessment.missing)).toEqual(requiredTools)
        expect(assessment.missing).toHaveLength(requiredTools.size)
      }),
    )
  })
})
