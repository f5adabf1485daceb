import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MAX_JSON_DEPTH, jsonDepth, jsonDepthProblem } from './json-depth.js'
import { WorkflowResultPreparationError, prepareWorkflowResult } from './prepare-workflow-result.js'

function nested(depth: number): unknown {
  let value: unknown = 1
  for (let level = 0; level < depth; level += 1) value = level % 2 === 0 ? [value] : { a: value }
  return value
}

/** A recursive depth count to check against, for values shallow enough for recursion. */
function recursiveDepth(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0
  const children = Array.isArray(value) ? value : Object.values(value)
  return 1 + Math.max(0, ...children.map(recursiveDepth))
}

describe('jsonDepth', () => {
  it('counts containers as JSON nests them, over many values', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 12 }), (value) => {
        expect(jsonDepth(value)).toBe(recursiveDepth(value))
      }),
    )
  })

  it('measures a 100,000-level value without overflowing the stack, stopping past the limit', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) as unknown
    expect(jsonDepth(deep)).toBe(MAX_JSON_DEPTH + 1)
    expect(jsonDepth(nested(MAX_JSON_DEPTH))).toBe(MAX_JSON_DEPTH)
  })

  it('names the limit and where the value came from, only past the limit', () => {
    expect(jsonDepthProblem(nested(MAX_JSON_DEPTH), 'input')).toBeUndefined()
    expect(jsonDepthProblem(nested(MAX_JSON_DEPTH + 1), 'input')).toBe(`input nests more than ${MAX_JSON_DEPTH} levels deep (the limit for JSON in Locus); flatten it`)
  })
})

describe('prepareWorkflowResult and deep values', () => {
  it('detaches a value at the limit and refuses one past it as too-deep, naming the path, without overflowing', () => {
    expect(prepareWorkflowResult(nested(MAX_JSON_DEPTH))).toEqual(nested(MAX_JSON_DEPTH))
    for (const depth of [MAX_JSON_DEPTH + 1, 3_000, 50_000]) {
      let thrown: unknown
      try {
        prepareWorkflowResult(nested(depth))
      } catch (error) {
        thrown = error
      }
      expect(WorkflowResultPreparationError.isInstance(thrown)).toBe(true)
      expect(thrown).toMatchObject({ reason: 'too-deep' })
      expect((thrown as Error).message).toMatch(/more than 512 levels/)
    }
  })
})
