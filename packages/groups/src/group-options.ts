import { GroupInputError, describeValue } from './group-input-error.js'
import { validateConcurrency } from './run-scope.js'

/** Options of one `parallel()` or `pipeline()` call. */
export interface GroupOptions {
  /**
   * How many branches (pipeline: items) may run at once; the rest wait in
   * input order. A positive integer or `Infinity`.
   * @default the run scope's concurrency (unbounded unless the scope sets one)
   */
  readonly concurrency?: number
  /** The group's label, on its events; branches inherit it until they set their own. */
  readonly label?: string
  /** The group's phase, on its events; branches inherit it until they set their own. */
  readonly phase?: string
}

/** Validated options; `concurrency` is left `undefined` when the scope's default applies. */
export interface GroupSettings {
  readonly concurrency: number | undefined
  readonly label: string | undefined
  readonly phase: string | undefined
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || typeof value === 'string') return value
  throw new GroupInputError(field, `expected a string, got ${describeValue(value)}`, 'Pass a string or leave it out.')
}

/** Validates group options, naming the offending field in a {@link GroupInputError}. */
export function readGroupOptions(options: unknown, primitive: string): GroupSettings {
  if (options === undefined) return { concurrency: undefined, label: undefined, phase: undefined }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new GroupInputError(`${primitive} options`, `expected an object, got ${describeValue(options)}`, 'Pass { concurrency?, label?, phase? } or nothing.')
  }
  const { concurrency, label, phase } = options as Record<string, unknown>
  return {
    concurrency: concurrency === undefined ? undefined : validateConcurrency(concurrency, `${primitive} options.concurrency`),
    label: optionalString(label, `${primitive} options.label`),
    phase: optionalString(phase, `${primitive} options.phase`),
  }
}

/** Checks that `value` is an array of functions, naming the first bad element. */
export function requireFunctions(value: unknown, field: string, what: string): readonly unknown[] {
  if (!Array.isArray(value)) {
    throw new GroupInputError(field, `expected an array of ${what}, got ${describeValue(value)}`, `Pass an array of ${what}.`)
  }
  const list = value as readonly unknown[]
  for (let index = 0; index < list.length; index += 1) {
    if (typeof list[index] !== 'function') {
      throw new GroupInputError(
        `${field}[${index}]`,
        `expected a function, got ${describeValue(list[index])}`,
        `Wrap the work in a function, as () => work(); a promise that is already running cannot be queued or stopped.`,
      )
    }
  }
  return list
}
