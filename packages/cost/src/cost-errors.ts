import { LocusError, hasLocusErrorCode } from '@locus/outcome'

/**
 * Stable codes of the errors this package throws. Callers branch on these,
 * never on message text.
 *
 * - `PRICE_FILE_INVALID`: a price table (a `--prices` file or the `prices`
 *   option) does not parse, or names a price that is not a non-negative decimal.
 * - `COST_OPTIONS_INVALID`: an amount or token count given in code or on the
 *   command line is not what it must be (a budget that is not a positive decimal).
 */
export const COST_ERROR_CODES = ['PRICE_FILE_INVALID', 'COST_OPTIONS_INVALID'] as const

/** One of {@link COST_ERROR_CODES}. */
export type CostErrorCode = (typeof COST_ERROR_CODES)[number]

/** One broken rule: where it is, and what it must be. */
export interface CostIssue {
  /** The field at fault, as a path into the price table (`models["gpt-x"].input`) or the option's name. */
  readonly field: string
  /** The whole sentence. */
  readonly message: string
}

/**
 * A price table or a money amount was refused. `field` names the first
 * field at fault and `issues` lists every broken rule, so a file can be fixed
 * in one pass.
 */
export class CostError extends LocusError {
  declare readonly code: CostErrorCode
  readonly field: string
  readonly issues: readonly CostIssue[]

  constructor(code: CostErrorCode, issues: readonly [CostIssue, ...CostIssue[]], context?: string) {
    const [first] = issues
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more: ${issues.slice(1).map((issue) => issue.message).join('; ')})` : ''
    super(`${context === undefined ? '' : `${context}: `}${first.message}${more}.`, { code })
    this.name = 'CostError'
    this.field = first.field
    this.issues = issues
  }

  /** True for a {@link CostError} from any installed copy of this package. */
  static override isInstance(value: unknown): value is CostError {
    return COST_ERROR_CODES.some((code) => hasLocusErrorCode(value, code))
  }
}
