import { MAX_JSON_DEPTH } from './json-depth.js'
import { formatJsonPath } from './json-path.js'
import type { JsonObject, JsonValue } from './json-value.js'
import { LocusError, hasLocusErrorCode } from './locus-error.js'

export const WORKFLOW_RESULT_PREPARATION = 'WORKFLOW_RESULT_PREPARATION'

/** Why a value could not cross the JSON boundary. */
export const PREPARATION_FAILURE_REASONS = ['bigint', 'circular', 'to-json-threw', 'too-deep'] as const
export type PreparationFailureReason = (typeof PREPARATION_FAILURE_REASONS)[number]

const ADVICE: Record<PreparationFailureReason, string> = {
  bigint: 'a BigInt has no JSON form; convert it to a string or a number before returning it',
  circular: 'the value refers back to itself; return a tree, not a graph with cycles',
  'to-json-threw': 'its toJSON() method or a property getter threw; fix it or return plain data',
  'too-deep': `it nests more than ${MAX_JSON_DEPTH} levels deep (the limit for JSON in Locus); flatten it`,
}

/**
 * A value returned across a workflow boundary (the root result, a direct
 * `parallel()` branch value or `pipeline()` stage value) could not be detached
 * as JSON. This is a boundary error, separate from the semantic outcome
 * classifier: the value never got far enough to be classified.
 */
export class WorkflowResultPreparationError extends LocusError {
  declare readonly code: typeof WORKFLOW_RESULT_PREPARATION
  /** Which of the three boundary failures occurred. */
  readonly reason: PreparationFailureReason
  /** Where in the value it occurred, as `$.items[3].size`; `$` is the value itself. */
  readonly path: string

  constructor(reason: PreparationFailureReason, path: string, cause?: unknown) {
    super(`Cannot detach the workflow result at ${path}: ${ADVICE[reason]}.`, {
      code: WORKFLOW_RESULT_PREPARATION,
      cause,
    })
    this.name = 'WorkflowResultPreparationError'
    this.reason = reason
    this.path = path
  }

  static override isInstance(value: unknown): value is WorkflowResultPreparationError {
    return isWorkflowResultPreparationError(value)
  }
}

/** True for a preparation error from any installed copy of this package. */
export function isWorkflowResultPreparationError(value: unknown): value is WorkflowResultPreparationError {
  return hasLocusErrorCode(value, WORKFLOW_RESULT_PREPARATION)
}

/** Unboxes `new Number(1)`, `new String('a')`, `new Boolean(true)` and `Object(1n)` as JSON does. */
function unbox(value: object): unknown {
  if (value instanceof Number) return Number(value)
  if (value instanceof String) return String(value)
  if (value instanceof Boolean) return value.valueOf()
  if (value instanceof BigInt) return value.valueOf()
  return value
}

class Detacher {
  private readonly segments: (string | number)[] = []
  private readonly ancestors = new Set<object>()

  private fail(reason: PreparationFailureReason, cause?: unknown): never {
    throw new WorkflowResultPreparationError(reason, formatJsonPath(this.segments), cause)
  }

  /** Returns the detached value, or `undefined` where JSON would omit it. */
  detach(input: unknown, key: string): JsonValue | undefined {
    let value = input
    if ((typeof value === 'object' && value !== null) || typeof value === 'bigint') {
      const toJSON = (value as { toJSON?: unknown }).toJSON
      if (typeof toJSON === 'function') {
        try {
          value = (toJSON as (this: unknown, key: string) => unknown).call(value, key)
        } catch (error) {
          this.fail('to-json-threw', error)
        }
      }
    }
    if (typeof value === 'object' && value !== null) value = unbox(value)

    switch (typeof value) {
      case 'string':
      case 'boolean':
        return value
      case 'number':
        // JSON writes NaN and the infinities as null, and -0 as 0.
        return Number.isFinite(value) ? (value === 0 ? 0 : value) : null
      case 'bigint':
        return this.fail('bigint')
      case 'undefined':
      case 'function':
      case 'symbol':
        return undefined
      default:
        break
    }
    if (value === null) return null
    const container = value as object
    if (this.ancestors.has(container)) this.fail('circular')
    // The ancestors are the containers open above this one: past the limit, stop before the stack does.
    if (this.ancestors.size >= MAX_JSON_DEPTH) this.fail('too-deep')
    this.ancestors.add(container)
    const detached = Array.isArray(container) ? this.detachArray(container) : this.detachObject(container)
    this.ancestors.delete(container)
    return detached
  }

  private read(source: object, key: string): unknown {
    try {
      return (source as Record<string, unknown>)[key]
    } catch (error) {
      return this.fail('to-json-threw', error)
    }
  }

  private detachArray(source: readonly unknown[]): JsonValue[] {
    const length = source.length
    const out = new Array<JsonValue>(length)
    for (let index = 0; index < length; index += 1) {
      this.segments.push(index)
      const element = this.detach(this.read(source, String(index)), String(index))
      this.segments.pop()
      out[index] = element === undefined ? null : element
    }
    return out
  }

  private detachObject(source: object): JsonObject {
    const out: JsonObject = {}
    for (const key of Object.keys(source)) {
      this.segments.push(key)
      const property = this.detach(this.read(source, key), key)
      this.segments.pop()
      if (property === undefined) continue
      if (key === '__proto__') {
        // An own "__proto__" key, as JSON.parse would create it, not a prototype change.
        Object.defineProperty(out, key, { value: property, enumerable: true, writable: true, configurable: true })
      } else {
        out[key] = property
      }
    }
    return out
  }
}

/**
 * Returns the JSON-detached copy of a value that crosses a workflow boundary,
 * with the semantics of `JSON.parse(JSON.stringify(value))`: `toJSON()` is
 * applied, `undefined`, functions and symbols are dropped from objects and
 * become `null` in arrays, non-finite numbers become `null`. A top-level
 * `undefined` detaches to `null`. The copy shares nothing with the input.
 *
 * @throws {WorkflowResultPreparationError} for a BigInt, a cycle, a
 * throwing `toJSON()`, or nesting deeper than `MAX_JSON_DEPTH` (`too-deep`),
 * naming the reason and the JSON path where it occurred.
 *
 * @example
 * ```ts
 * prepareWorkflowResult({ at: new Date(0), skip: undefined })
 * // => { at: '1970-01-01T00:00:00.000Z' }
 * ```
 */
export function prepareWorkflowResult(value: unknown): JsonValue {
  return new Detacher().detach(value, '') ?? null
}
