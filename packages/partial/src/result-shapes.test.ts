// The specification writes tool results as { ok: true, data } and
// { ok: false, error }. Every reader of this package must read those shapes,
// and the canonical ones, the same way: these properties check that
// assessPartial, describeOutcome, isEmptyResult, answerPartial,
// decideStepRetry and parseToolResult agree on each step of every run.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { answerPartial } from './answer-partial.js'
import { assessPartial } from './assess-partial.js'
import { describeOutcome } from './describe-outcome.js'
import { PartialInputError } from './partial-error.js'
import type { Plan, PlanStep } from './plan.js'
import { decideStepRetry } from './should-retry-step.js'
import { STEP_CRITICALITIES } from './step-criticality.js'
import {
  DEFAULT_FAILURE_CLASS,
  FAILURE_CLASSES,
  type FailureClass,
  type ToolResultInput,
  isEmptyData,
  isEmptyResult,
  parseToolResult,
  toolEmpty,
  toolFailed,
  toolFound,
  toolOk,
} from './tool-result.js'

const invoices: PlanStep = { n: 2, tool: 'get_invoices', criticality: 'required', description: 'outstanding invoices' }
const plan: Plan = { steps: [invoices] }
const budget = { remainingSteps: () => 10 }

/** What a result means, worked out from its shape alone and independently of the package. */
type Meaning = { kind: 'found' } | { kind: 'empty' } | { kind: 'failed'; class: FailureClass; error: string }

function meaningOf(result: ToolResultInput): Meaning {
  if (!result.ok) return { kind: 'failed', class: result.class ?? 'fatal', error: result.error }
  if (result.state !== undefined) return { kind: result.state }
  return { kind: isEmptyData(result.data) ? 'empty' : 'found' }
}

const emptyData = fc.constantFrom<unknown>([], {}, null, undefined, '', new Map(), new Set())
const someData = fc.oneof(fc.jsonValue(), emptyData, fc.constant(new Map([[1, 2]])), fc.constant(new Date(0)))
const failureClass = fc.constantFrom(...FAILURE_CLASSES)

/** Every shape a caller may hand in: the seed's plain ones and the canonical ones. */
const resultShape: fc.Arbitrary<ToolResultInput> = fc.oneof(
  someData.map((data): ToolResultInput => ({ ok: true, data })),
  fc.constant<ToolResultInput>({ ok: true }),
  fc.string().map((error): ToolResultInput => ({ ok: false, error })),
  fc.tuple(failureClass, fc.string()).map(([klass, error]): ToolResultInput => ({ ok: false, class: klass, error })),
  someData.map((data) => toolOk(data)),
  someData.map((data) => toolFound(data)),
  someData.map((data) => toolEmpty(data)),
  fc.tuple(failureClass, fc.string()).map(([klass, error]) => toolFailed(klass, error)),
)

describe('the seed result shapes', () => {
  it('{ ok: true, data: [] } is an empty answer in every reader', async () => {
    const result = { ok: true, data: [] } as const
    expect(assessPartial(plan, new Map([[2, result]]))).toEqual({ kind: 'complete', answerable: true, gaps: [] })
    expect(describeOutcome(invoices, result)).toBe('checked outstanding invoices: none found')
    expect(isEmptyResult(result)).toBe(true)
    expect(parseToolResult(result)).toEqual(toolEmpty())
    const answer = await answerPartial({ question: 'q', plan, results: new Map([[2, result]]) }, assessPartial(plan, new Map([[2, result]])), async () => ({ text: 'none' }))
    expect(answer.gathered).toMatchObject([{ state: 'empty', summary: 'checked outstanding invoices: none found' }])
  })

  it('{ ok: true, data: [...] } is found in every reader', () => {
    const result = { ok: true, data: [{ id: 'INV-1' }] } as const
    expect(assessPartial(plan, new Map([[2, result]])).kind).toBe('complete')
    expect(describeOutcome(invoices, result)).toBe('checked outstanding invoices')
    expect(isEmptyResult(result)).toBe(false)
  })

  it(`{ ok: false, error } is a gap of class ${DEFAULT_FAILURE_CLASS} in every reader`, () => {
    const result = { ok: false, error: 'billing API returned 503' } as const
    expect(assessPartial(plan, new Map([[2, result]]))).toMatchObject({ kind: 'cannot_answer', missing: ['get_invoices'], gaps: [{ reason: 'billing API returned 503' }] })
    expect(describeOutcome(invoices, result)).toBe('could not check outstanding invoices')
    expect(isEmptyResult(result)).toBe(false)
    expect(parseToolResult(result)).toEqual(toolFailed('fatal', 'billing API returned 503'))
    expect(decideStepRetry(invoices, result, budget, plan)).toEqual({ retry: false, reason: 'not-correctable' })
  })

  it('an explicit state wins over the data: toolFound([]) stays found', () => {
    expect(isEmptyResult(toolFound([]))).toBe(false)
    expect(describeOutcome(invoices, toolFound([]))).toBe('checked outstanding invoices')
  })

  it('a value that is no tool result is refused by every reader alike, naming the field', () => {
    for (const bad of [{ ok: 'yes' }, { ok: false }, { ok: false, error: 'x', class: 'flaky' }, { ok: true, state: 'maybe', data: 1 }, null, 'ok']) {
      const value = bad as unknown as ToolResultInput
      expect(() => parseToolResult(value)).toThrow(PartialInputError)
      expect(() => isEmptyResult(value)).toThrow(PartialInputError)
      expect(() => describeOutcome(invoices, value)).toThrow(PartialInputError)
      expect(() => decideStepRetry(invoices, value, budget, plan)).toThrow(PartialInputError)
      expect(() => assessPartial(plan, new Map([[2, value]]))).toThrow(/results\.get\(2\)/)
    }
  })
})

const stepsArbitrary = fc.uniqueArray(
  fc.record({
    n: fc.integer({ min: 0, max: 30 }),
    tool: fc.constantFrom('get_contract', 'get_invoices', 'get_payment_history', 'search_tickets'),
    criticality: fc.constantFrom(...STEP_CRITICALITIES),
  }),
  { selector: (step) => step.n, minLength: 1, maxLength: 6 },
)
const runArbitrary = stepsArbitrary.chain((steps) =>
  fc.tuple(fc.constant(steps as PlanStep[]), fc.array(fc.option(resultShape, { nil: undefined }), { minLength: steps.length, maxLength: steps.length })),
)

function resultsOf(steps: readonly PlanStep[], shapes: readonly (ToolResultInput | undefined)[]): Map<number, ToolResultInput> {
  const results = new Map<number, ToolResultInput>()
  steps.forEach((step, index) => {
    const shape = shapes[index]
    if (shape !== undefined) results.set(step.n, shape)
  })
  return results
}

describe('every reader agrees on every shape (properties)', () => {
  it('isEmptyResult, describeOutcome and parseToolResult read one meaning from each shape', () => {
    fc.assert(
      fc.property(resultShape, (result) => {
        const meaning = meaningOf(result)
        const parsed = parseToolResult(result)
        expect(isEmptyResult(result)).toBe(meaning.kind === 'empty')
        expect(describeOutcome(invoices, result)).toBe(
          meaning.kind === 'failed' ? 'could not check outstanding invoices' : meaning.kind === 'empty' ? 'checked outstanding invoices: none found' : 'checked outstanding invoices',
        )
        if (meaning.kind === 'failed') expect(parsed).toEqual({ ok: false, class: meaning.class, error: meaning.error })
        else expect(parsed).toMatchObject({ ok: true, state: meaning.kind })
        // Reading twice changes nothing: the canonical form is a fixed point.
        expect(parseToolResult(parsed)).toEqual(parsed)
      }),
    )
  })

  it('a shape read back from JSON means what it meant before', () => {
    const jsonShape = fc.oneof(
      // fc.jsonValue() can give -0, which JSON writes as 0: that is JSON's doing, not a reader's, so the data is
      // taken as JSON would carry it.
      fc.jsonValue().map((data): ToolResultInput => ({ ok: true, data: JSON.parse(JSON.stringify(data)) as typeof data })),
      fc.string().map((error): ToolResultInput => ({ ok: false, error })),
      fc.tuple(failureClass, fc.string()).map(([klass, error]): ToolResultInput => ({ ok: false, class: klass, error })),
    )
    fc.assert(
      fc.property(jsonShape, (result) => {
        const revived = JSON.parse(JSON.stringify(result)) as ToolResultInput
        expect(meaningOf(revived)).toEqual(meaningOf(result))
        expect(parseToolResult(revived)).toEqual(parseToolResult(result))
      }),
    )
  })

  it('assessPartial, answerPartial, describeOutcome, isEmptyResult and decideStepRetry agree on each step of a run', async () => {
    await fc.assert(
      fc.asyncProperty(runArbitrary, async ([steps, shapes]) => {
        const results = resultsOf(steps, shapes)
        const assessment = assessPartial({ steps }, results)
        const answer = await answerPartial({ question: 'q', plan: { steps }, results }, assessment, async () => ({ text: 'answer' }))
        for (const step of steps) {
          const result = results.get(step.n)
          const meaning: Meaning | undefined = result === undefined ? undefined : meaningOf(result)
          const missing = meaning === undefined || meaning.kind === 'failed'
          const gap = assessment.gaps.find((candidate) => candidate.step === step.n)
          const gathered = answer.gathered.find((candidate) => candidate.step === step.n)
          const sentence = describeOutcome(step, result)

          expect(gap !== undefined).toBe(missing)
          expect(gathered !== undefined).toBe(!missing)
          expect(sentence.startsWith('could not check')).toBe(missing)
          expect(isEmptyResult(result)).toBe(meaning?.kind === 'empty')
          if (meaning?.kind === 'failed') expect(gap?.reason).toBe(meaning.error)
          if (gathered !== undefined) {
            expect(gathered.state).toBe(meaning?.kind)
            expect(gathered.summary).toBe(sentence)
          }
          if (result !== undefined) {
            const decision = decideStepRetry(step, result, budget, { steps })
            if (!missing) expect(decision).toEqual({ retry: false, reason: 'succeeded' })
            else if (step.criticality !== 'required') expect(decision).toEqual({ retry: false, reason: 'not-required' })
            else if (meaning?.kind === 'failed' && meaning.class !== 'correctable') expect(decision.retry).toBe(false)
          }
        }
        const requiredMissing = steps.some((step) => step.criticality === 'required' && assessment.gaps.some((gap) => gap.step === step.n))
        expect(assessment.kind === 'cannot_answer').toBe(requiredMissing)
      }),
      { numRuns: 60 },
    )
  })
})
