const LOCUS_ERROR_MARKER = Symbol.for('locus.error')

/** Code given to anything thrown that was not already a Locus error. */
export const UNKNOWN_ERROR_CODE = 'UNKNOWN_ERROR'

export interface LocusErrorOptions {
  /** Stable, machine-readable code; callers branch on it, never on the message. */
  readonly code: string
  /** The underlying error, always kept for diagnosis. */
  readonly cause?: unknown
}

/**
 * The base error of every Locus package.
 *
 * Identity is a registered symbol rather than the class object, so
 * {@link LocusError.isInstance} recognises errors thrown by another installed
 * copy of the same package, where `instanceof` would say no.
 *
 * @example
 * ```ts
 * try { await run() } catch (error) {
 *   if (LocusError.isInstance(error) && error.code === 'WORKFLOW_GROUP_FAILURE') { ... }
 * }
 * ```
 */
export class LocusError extends Error {
  readonly code: string
  private readonly [LOCUS_ERROR_MARKER] = true

  constructor(message: string, options: LocusErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'LocusError'
    this.code = options.code
  }

  /** True for any Locus error, whichever copy of the package created it. */
  static isInstance(value: unknown): value is LocusError {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as Record<symbol, unknown>)[LOCUS_ERROR_MARKER] === true &&
      typeof (value as { code?: unknown }).code === 'string'
    )
  }
}

/** True when `value` is a Locus error carrying the given stable code. */
export function hasLocusErrorCode<TCode extends string>(value: unknown, code: TCode): value is LocusError & { code: TCode } {
  return LocusError.isInstance(value) && value.code === code
}

/**
 * Turns anything thrown into a Locus error. A Locus error comes back as it is;
 * any other value is wrapped with code `UNKNOWN_ERROR` and kept as `cause`.
 */
export function toLocusError(value: unknown): LocusError {
  if (LocusError.isInstance(value)) return value
  if (value instanceof Error) {
    const wrapped = new LocusError(value.message, { code: UNKNOWN_ERROR_CODE, cause: value })
    wrapped.name = value.name
    return wrapped
  }
  return new LocusError(describeThrown(value), { code: UNKNOWN_ERROR_CODE, cause: value })
}

function describeThrown(value: unknown): string {
  if (typeof value === 'string') return value
  if (value === undefined) return 'undefined was thrown'
  if (value === null) return 'null was thrown'
  try {
    const json = JSON.stringify(value) as string | undefined
    if (json !== undefined) return `a non-error value was thrown: ${json}`
  } catch {
    // fall through to the type name
  }
  return `a non-error value of type ${typeof value} was thrown`
}
