import { LocusError, hasLocusErrorCode } from '@locus/outcome'

/** The stable codes of the errors this package throws. */
export const PARTIAL_ERROR_CODES = ['PARTIAL_INVALID_INPUT', 'OUTCOME_STORE_FAILURE'] as const
export type PartialErrorCode = (typeof PARTIAL_ERROR_CODES)[number]

/**
 * A value handed to this package is not what it documents: a plan with two
 * steps numbered alike, a tool result without `ok`, a fallback without a
 * caveat, a run record with an unknown outcome. `field` names the offending
 * field as a path (`plan.steps[2].criticality`); the message says what to do.
 *
 * @example
 * ```ts
 * try { assessPartial(plan, results) } catch (error) {
 *   if (PartialInputError.isInstance(error)) console.error(error.field, error.message)
 * }
 * ```
 */
export class PartialInputError extends LocusError {
  declare readonly code: 'PARTIAL_INVALID_INPUT'
  /** Path of the field that is wrong, such as `plan.steps[2].criticality`. */
  readonly field: string

  constructor(field: string, problem: string, cause?: unknown) {
    super(`Invalid ${field}: ${problem}`, { code: 'PARTIAL_INVALID_INPUT', cause })
    this.name = 'PartialInputError'
    this.field = field
  }

  /** True for this error from any installed copy of the package. */
  static override isInstance(value: unknown): value is PartialInputError {
    return hasLocusErrorCode(value, 'PARTIAL_INVALID_INPUT')
  }
}

/** Which kind of store failed. */
export type OutcomeStoreKind = 'sqlite' | 'postgres'

/**
 * An outcome store could not do what was asked: the database was unreachable,
 * the tables were missing because `migrate()` was never called, the store was
 * already closed, or its driver package is not installed (`missingPackage`).
 * The driver's error is kept as `cause`.
 */
export class OutcomeStoreError extends LocusError {
  declare readonly code: 'OUTCOME_STORE_FAILURE'
  /** The store method that failed, such as `recordRun`. */
  readonly operation: string
  /** Which backend failed. */
  readonly store: OutcomeStoreKind

  /** The npm package the store needs and could not load (`better-sqlite3`, `pg`); `undefined` for any other failure. */
  readonly missingPackage: string | undefined

  constructor(store: OutcomeStoreKind, operation: string, cause: unknown, missingPackage?: string) {
    super(
      missingPackage === undefined
        ? `The ${storeName(store)} outcome store failed in ${operation}(): ${describeCause(cause)}. ${advice(cause)}`
        : `The ${storeName(store)} outcome store needs the ${missingPackage} package, which is not installed ` +
            `(it is an optional peer dependency of @locus/partial, so installing Locus compiles no native module). ` +
            `Install it in your project: npm install ${missingPackage}`,
      { code: 'OUTCOME_STORE_FAILURE', cause },
    )
    this.name = 'OutcomeStoreError'
    this.operation = operation
    this.store = store
    this.missingPackage = missingPackage
  }

  /** True for this error from any installed copy of the package. */
  static override isInstance(value: unknown): value is OutcomeStoreError {
    return hasLocusErrorCode(value, 'OUTCOME_STORE_FAILURE')
  }
}

function storeName(store: OutcomeStoreKind): string {
  return store === 'sqlite' ? 'SQLite' : 'PostgreSQL'
}

function describeCause(cause: unknown): string {
  if (cause instanceof Error) return cause.message
  return String(cause)
}

function advice(cause: unknown): string {
  const message = describeCause(cause)
  if (/no such table|does not exist/i.test(message)) return 'Call migrate() once before recording or reporting.'
  // better-sqlite3 installed with --ignore-scripts (or for another Node version) has no compiled addon.
  if (/Could not locate the bindings file|better_sqlite3\.node|NODE_MODULE_VERSION/i.test(message)) {
    return 'better-sqlite3 is installed without a native build for this Node; build it: npm rebuild better-sqlite3'
  }
  if (/not open|closed|ended/i.test(message)) return 'The store was closed; open a new one.'
  if (/ECONNREFUSED|ENOTFOUND|timeout|password|authentication/i.test(message)) {
    return 'Check that the database is running and that the connection string is right.'
  }
  return 'See the cause for the driver error.'
}

/** Turns zod issues into the path of the first offending field, prefixed with `root`. */
export function formatIssuePath(root: string, path: readonly PropertyKey[]): string {
  let formatted = root
  for (const segment of path) {
    formatted += typeof segment === 'number' ? `[${segment}]` : `.${String(segment)}`
  }
  return formatted
}
