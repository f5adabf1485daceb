import { LocusError, hasLocusErrorCode } from '@locus/outcome'

export const GROUP_INVALID_INPUT = 'GROUP_INVALID_INPUT'

/**
 * A group primitive or a run scope was called with input it cannot use (a
 * thunk that is not a function, a concurrency of 0, ...). Raised before any
 * branch starts, so nothing ran. `field` names the offending argument.
 *
 * @example
 * ```ts
 * await parallel(thunks, { concurrency: 0 }) // rejects: field "options.concurrency"
 * ```
 */
export class GroupInputError extends LocusError {
  declare readonly code: typeof GROUP_INVALID_INPUT
  /** The argument or field that was wrong, as `options.concurrency` or `thunks[2]`. */
  readonly field: string

  constructor(field: string, problem: string, fix: string) {
    super(`Invalid ${field}: ${problem}. ${fix}`, { code: GROUP_INVALID_INPUT })
    this.name = 'GroupInputError'
    this.field = field
  }

  /** True for this error from any installed copy of the package. */
  static override isInstance(value: unknown): value is GroupInputError {
    return hasLocusErrorCode(value, GROUP_INVALID_INPUT)
  }
}

/** Describes a value for an error message without risking a throw. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  switch (typeof value) {
    case 'string':
      return `the string ${JSON.stringify(value)}`
    case 'number':
    case 'boolean':
    case 'undefined':
      return String(value)
    case 'bigint':
      return `the BigInt ${String(value)}n`
    default:
      return `a value of type ${typeof value}`
  }
}
