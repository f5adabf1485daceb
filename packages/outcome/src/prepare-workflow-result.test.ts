import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { formatJsonPath } from './json-path.js'
import { LocusError } from './locus-error.js'
import {
  WorkflowResultPreparationError,
  isWorkflowResultPreparationError,
  prepareWorkflowResult,
} from './prepare-workflow-result.js'

function preparationError(run: () => unknown): WorkflowResultPreparationError {
  try {
    run()
  } catch (error) {
    if (isWorkflowResultPreparationError(error)) return error
    throw new Error(`expected a WorkflowResultPreparationError, got ${String(error)}`)
  }
  throw new Error('expected prepareWorkflowResult to throw')
}

const jsonOracle = (value: unknown): unknown => {
  const text = JSON.stringify(value) as string | undefined
  return JSON.parse(text ?? 'null')
}

describe('prepareWorkflowResult: JSON semantics', () => {
  it('applies toJSON, with the property key as JSON.stringify passes it', () => {
    const keys: string[] = []
    const tracker = { toJSON: (key: string) => (keys.push(key), 'tracked') }
    expect(prepareWorkflowResult({ at: new Date(0), list: [tracker], named: tracker })).toEqual({
      at: '1970-01-01T00:00:00.000Z',
      list: ['tracked'],
      named: 'tracked',
    })
    expect(keys).toEqual(['0', 'named'])
    expect(prepareWorkflowResult(tracker)).toBe('tracked')
    expect(keys.at(-1)).toBe('')
  })

  it('drops undefined, functions and symbols from objects and writes them as null in arrays', () => {
    const value = { a: undefined, b: () => 1, c: Symbol('s'), d: 1, list: [undefined, () => 1, Symbol('t')] }
    expect(prepareWorkflowResult(value)).toStrictEqual({ d: 1, list: [null, null, null] })
  })

  it('detaches a top-level undefined, function or symbol to null', () => {
    expect(prepareWorkflowResult(undefined)).toBeNull()
    expect(prepareWorkflowResult(() => 1)).toBeNull()
    expect(prepareWorkflowResult(Symbol('x'))).toBeNull()
  })

  it('keeps null as a valid value', () => {
    expect(prepareWorkflowResult(null)).toBeNull()
    expect(prepareWorkflowResult({ value: null })).toStrictEqual({ value: null })
  })

  it('writes non-finite numbers as null and -0 as 0', () => {
    expect(prepareWorkflowResult([Number.NaN, Infinity, -Infinity, -0])).toStrictEqual([null, null, null, 0])
    expect(Object.is(prepareWorkflowResult(-0), 0)).toBe(true)
  })

  it('unboxes boxed primitives and ignores symbol keys', () => {
    const value = { n: Object(3), s: Object('x'), b: Object(false), [Symbol('hidden')]: 1 }
    expect(prepareWorkflowResult(value)).toStrictEqual({ n: 3, s: 'x', b: false })
  })

  it('allows shared references that are not cycles', () => {
    const shared = { id: 1 }
    expect(prepareWorkflowResult({ left: shared, right: [shared, shared] })).toStrictEqual({
      left: { id: 1 },
      right: [{ id: 1 }, { id: 1 }],
    })
  })

  it('keeps an own "__proto__" key as data without changing the prototype', () => {
    const input = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') as object
    const detached = prepareWorkflowResult(input) as Record<string, unknown>
    expect(Object.getPrototypeOf(detached)).toBe(Object.prototype)
    expect(Object.keys(detached)).toEqual(['__proto__', 'x'])
    expect((detached as { polluted?: unknown }).polluted).toBeUndefined()
  })

  it('returns a copy that shares nothing with the input', () => {
    const input = { nested: { list: [1, { deep: true }] } }
    const detached = prepareWorkflowResult(input) as typeof input
    expect(detached).toStrictEqual(input)
    ;(detached.nested.list[1] as { deep: boolean }).deep = false
    expect((input.nested.list[1] as { deep: boolean }).deep).toBe(true)
  })
})

describe('prepareWorkflowResult: values that cannot cross', () => {
  it('reports a BigInt with reason "bigint" and its path', () => {
    const error = preparationError(() => prepareWorkflowResult({ items: [{}, {}, {}, { size: 10n }] }))
    expect(error).toMatchObject({
      name: 'WorkflowResultPreparationError',
      code: 'WORKFLOW_RESULT_PREPARATION',
      reason: 'bigint',
      path: '$.items[3].size',
    })
    expect(error.message).toContain('$.items[3].size')
    expect(error.message).toMatch(/string or a number/)
  })

  it('reports a top-level BigInt at $', () => {
    expect(preparationError(() => prepareWorkflowResult(1n)).path).toBe('$')
  })

  it('reports a cycle with reason "circular" at the position that closes it', () => {
    const node: Record<string, unknown> = { name: 'root', children: [{ name: 'leaf' }] }
    ;(node.children as Record<string, unknown>[])[0]!.parent = node
    const error = preparationError(() => prepareWorkflowResult(node))
    expect(error.reason).toBe('circular')
    expect(error.path).toBe('$.children[0].parent')
  })

  it('reports a throwing toJSON with reason "to-json-threw" and keeps the cause', () => {
    const boom = new Error('boom')
    const error = preparationError(() =>
      prepareWorkflowResult({ 'content-type': { toJSON: () => { throw boom } } }),
    )
    expect(error.reason).toBe('to-json-threw')
    expect(error.path).toBe('$["content-type"]')
    expect(error.cause).toBe(boom)
  })

  it('reports a throwing getter as to-json-threw rather than leaking a raw error', () => {
    const value = { get broken(): never { throw new TypeError('getter') } }
    const error = preparationError(() => prepareWorkflowResult(value))
    expect(error.reason).toBe('to-json-threw')
    expect(error.path).toBe('$.broken')
  })

  it('is a Locus error recognised by every guard', () => {
    const error = preparationError(() => prepareWorkflowResult(2n))
    expect(error).toBeInstanceOf(WorkflowResultPreparationError)
    expect(LocusError.isInstance(error)).toBe(true)
    expect(WorkflowResultPreparationError.isInstance(error)).toBe(true)
    expect(isWorkflowResultPreparationError(new Error('other'))).toBe(false)
    expect(isWorkflowResultPreparationError(new LocusError('x', { code: 'OTHER' }))).toBe(false)
  })
})

type Segment = string | number

/** Replaces one position of a JSON tree, walking down by `choices`, and returns that position's path. */
function plant(root: { data: unknown }, choices: readonly number[], leaf: (holder: unknown) => unknown): Segment[] {
  const path: Segment[] = ['data']
  let holder: object = root
  let key: Segment = 'data'
  for (const choice of choices) {
    const current: unknown = (holder as Record<string, unknown>)[key]
    if (typeof current !== 'object' || current === null) break
    const keys = Array.isArray(current) ? current.map((_, index) => index) : Object.keys(current)
    if (keys.length === 0) break
    holder = current
    key = keys[choice % keys.length]!
    path.push(key)
  }
  Object.defineProperty(holder, key, { value: leaf(root), enumerable: true, writable: true, configurable: true })
  return path
}

const plantedTree = fc.record({ json: fc.jsonValue(), choices: fc.array(fc.nat(), { maxLength: 8 }) })

describe('prepareWorkflowResult properties', () => {
  it('equals JSON.parse(JSON.stringify(value)) on any value JSON can serialise', () => {
    const serialisable = fc.anything({
      withBigInt: false,
      withBoxedValues: true,
      withDate: true,
      withMap: true,
      withSet: true,
      withNullPrototype: true,
      withObjectString: true,
      withSparseArray: true,
      withTypedArray: true,
      stringUnit: 'grapheme',
    })
    fc.assert(fc.property(serialisable, (value) => {
      expect(prepareWorkflowResult(value)).toStrictEqual(jsonOracle(value))
    }))
  })

  it('is idempotent: detaching a detached value changes nothing', () => {
    fc.assert(fc.property(fc.anything({ withBigInt: false, withDate: true, withMap: true }), (value) => {
      const once = prepareWorkflowResult(value)
      expect(prepareWorkflowResult(once)).toStrictEqual(once)
    }))
  })

  it('reports a BigInt planted anywhere with reason "bigint" and its exact path', () => {
    fc.assert(fc.property(plantedTree, fc.bigInt(), ({ json, choices }, big) => {
      const root = { data: json }
      const path = plant(root, choices, () => big)
      const error = preparationError(() => prepareWorkflowResult(root))
      expect(error.reason).toBe('bigint')
      expect(error.path).toBe(formatJsonPath(path))
    }))
  })

  it('reports a cycle planted anywhere with reason "circular" at the back-reference', () => {
    fc.assert(fc.property(plantedTree, ({ json, choices }) => {
      const root = { data: json }
      const path = plant(root, choices, (top) => top)
      const error = preparationError(() => prepareWorkflowResult(root))
      expect(error.reason).toBe('circular')
      expect(error.path).toBe(formatJsonPath(path))
    }))
  })

  it('reports a throwing toJSON planted anywhere as "to-json-threw" with its cause', () => {
    fc.assert(fc.property(plantedTree, fc.string(), ({ json, choices }, message) => {
      const thrown = new Error(message)
      const root = { data: json }
      const path = plant(root, choices, () => ({ toJSON: () => { throw thrown } }))
      const error = preparationError(() => prepareWorkflowResult(root))
      expect(error.reason).toBe('to-json-threw')
      expect(error.path).toBe(formatJsonPath(path))
      expect(error.cause).toBe(thrown)
    }))
  })
})
