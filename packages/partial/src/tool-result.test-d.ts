import { describe, expectTypeOf, it } from 'vitest'
import { type Assessment, assessPartial } from './assess-partial.js'
import { describeOutcome } from './describe-outcome.js'
import {
  type ToolEmpty,
  type ToolFailed,
  type ToolFound,
  type ToolResult,
  type ToolResultInput,
  isEmptyResult,
  parseToolResult,
  toolEmpty,
  toolFailed,
  toolFound,
} from './tool-result.js'

describe('ToolResult keeps empty and failed apart in the types', () => {
  it('a failed result has no data to mistake for an empty list', () => {
    const result = toolFailed('unavailable', 'down') as ToolResult<string[]>
    if (!result.ok) {
      expectTypeOf(result).toEqualTypeOf<ToolFailed>()
      expectTypeOf(result).not.toHaveProperty('data')
    }
  })

  it('an ok result must say whether it found something', () => {
    const accept = (result: ToolResult) => result
    // @ts-expect-error state is required on an ok result
    accept({ ok: true, data: [] })
    // @ts-expect-error a failed result cannot claim a state
    accept({ ok: false, class: 'unavailable', error: 'x', state: 'empty' })
    // @ts-expect-error the failure class is a closed list
    accept({ ok: false, class: 'flaky', error: 'x' })
  })

  it('narrowing on ok and state reaches the right member', () => {
    const check = (result: ToolResult<number[]>) => {
      if (result.ok && result.state === 'found') expectTypeOf(result).toEqualTypeOf<ToolFound<number[]>>()
      if (result.ok && result.state === 'empty') expectTypeOf(result).toEqualTypeOf<ToolEmpty<number[]>>()
      if (isEmptyResult(result)) expectTypeOf(result).toEqualTypeOf<ToolEmpty<number[]>>()
    }
    check(toolFound([1]))
    expectTypeOf(toolEmpty()).toEqualTypeOf<ToolEmpty<readonly never[]>>()
  })

  it('only a cannot_answer assessment lists missing tools', () => {
    const assessment = {} as Assessment
    if (assessment.kind === 'cannot_answer') expectTypeOf(assessment.missing).toEqualTypeOf<readonly string[]>()
    expectTypeOf(assessment).not.toHaveProperty('missing')
  })

  it('every reader takes the specification\'s plain shapes, and parseToolResult makes them canonical', () => {
    const plain: ToolResultInput<string[]> = { ok: true, data: [] }
    const failed: ToolResultInput = { ok: false, error: 'down' }
    expectTypeOf(isEmptyResult(plain)).toEqualTypeOf<boolean>()
    expectTypeOf(describeOutcome({ n: 1, tool: 't', criticality: 'required' }, failed)).toEqualTypeOf<string>()
    expectTypeOf(assessPartial({ steps: [] }, new Map([[1, plain]]))).toEqualTypeOf<Assessment>()
    expectTypeOf(parseToolResult(plain)).toEqualTypeOf<ToolResult<string[]>>()
    const accept = (result: ToolResultInput) => result
    // @ts-expect-error a failed result still needs its error
    accept({ ok: false })
  })
})
