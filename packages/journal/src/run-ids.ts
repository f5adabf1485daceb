import { LocusError, hasLocusErrorCode } from '@locus/outcome'

export const RUN_ID_INVALID = 'RUN_ID_INVALID'

/** Letters, digits, `.`, `_` and `-`, starting with a letter or digit, at most 128 characters. */
const RUN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

/** The rule a run, execution or call id must follow, as quoted in error messages. */
export const RUN_ID_RULE =
  '1 to 128 characters, letters, digits, ".", "_" and "-" only, starting with a letter or digit (no "/", "\\", ".." or spaces)'

/** An id that would not stay inside its directory (or is not a usable directory name). */
export class RunIdError extends LocusError {
  declare readonly code: typeof RUN_ID_INVALID
  /** The refused id. */
  readonly id: string
  /** Which id it was: `storageRootRunId`, `executionId` or `callId`. */
  readonly field: string

  constructor(field: string, id: unknown) {
    const shown = typeof id === 'string' ? JSON.stringify(id) : `a ${id === null ? 'null' : typeof id}`
    super(`Invalid ${field} ${shown}: ids name directories under the runs directory, so they must be ${RUN_ID_RULE}.`, {
      code: RUN_ID_INVALID,
    })
    this.name = 'RunIdError'
    this.id = typeof id === 'string' ? id : String(id)
    this.field = field
  }

  static override isInstance(value: unknown): value is RunIdError {
    return hasLocusErrorCode(value, RUN_ID_INVALID)
  }
}

/**
 * Returns `id` when it is safe as a single directory name under the runs
 * directory, and throws {@link RunIdError} (code `RUN_ID_INVALID`) otherwise.
 * No accepted id can reach outside its parent: separators, `..`, absolute
 * paths, NUL bytes and empty ids are all refused.
 *
 * @example
 * ```ts
 * validateRunId('run-2026-09-22.1') // => 'run-2026-09-22.1'
 * validateRunId('../etc')            // throws RunIdError
 * ```
 */
export function validateRunId(id: string, field = 'run id'): string {
  if (typeof id !== 'string' || !RUN_ID_PATTERN.test(id)) throw new RunIdError(field, id)
  return id
}
