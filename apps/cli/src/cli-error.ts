import { LocusError } from '@locus/outcome'

/**
 * Stable codes of the mistakes `locus` reports before anything runs. Every one
 * of them exits with code 2 and one message that says what to do. Each code
 * has one owner: none is also a code of `@locus/runtime` or another package
 * (the runtime's `WORKFLOW_INPUT_INVALID` reaches the terminal as
 * `CLI_INPUT_INVALID`, with a hint about `--input`).
 */
export const CLI_ERROR_CODES = [
  'CLI_USAGE',
  'WORKFLOW_FILE_NOT_FOUND',
  'WORKFLOW_FILE_UNREADABLE',
  'WORKFLOW_EXPORT_MISSING',
  'WORKFLOW_SYNTAX_ERROR',
  'WORKFLOW_IMPORT_FAILED',
  'CLI_INPUT_INVALID',
  'RUN_NOTHING_RECORDED',
  'RUN_JOURNAL_DAMAGED',
  'RUNS_DIR_NOT_WRITABLE',
  'OUTCOME_STORE_UNREADABLE',
  'HOST_OPTIONS_INVALID',
  'INIT_FILE_EXISTS',
  'STORAGE_FAILED',
  'SCHEDULE_NOT_FOUND',
] as const

/** Marks a {@link CliError}; registered, so every installed copy of the package shares it. */
const CLI_ERROR_BRAND = Symbol.for('@locus/cli:CliError')

/** One of {@link CLI_ERROR_CODES}. */
export type CliErrorCode = (typeof CLI_ERROR_CODES)[number]

/**
 * A mistake the person at the keyboard can fix: a wrong flag, a missing file,
 * input that fails the workflow's schema, an unknown run id. The message names
 * what is wrong and what to do; `locus` prints it without a stack trace (unless
 * `--verbose`) and exits 2.
 *
 * @example
 * ```ts
 * throw new CliError('CLI_USAGE', 'Pass a workflow file: `locus run <file>`.')
 * ```
 */
export class CliError extends LocusError {
  declare readonly code: CliErrorCode
  private readonly [CLI_ERROR_BRAND] = true

  constructor(code: CliErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, { code, cause: options.cause })
    this.name = 'CliError'
  }

  /**
   * True for a {@link CliError} from any installed copy of this package: it
   * carries the class's brand (a registered symbol, the same in every copy)
   * and one of its codes. A Locus error of another class is never one, even
   * with a code that looks alike.
   */
  static override isInstance(value: unknown): value is CliError {
    return (
      LocusError.isInstance(value) &&
      (value as unknown as Record<symbol, unknown>)[CLI_ERROR_BRAND] === true &&
      (CLI_ERROR_CODES as readonly string[]).includes(value.code)
    )
  }
}
