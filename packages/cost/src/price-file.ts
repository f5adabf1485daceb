import { z } from 'zod'
import { CostError, type CostIssue } from './cost-errors.js'
import { Usd, type UsdAmount } from './usd.js'

/** What one model costs, in dollars per million tokens of each kind. */
export interface ModelPrice {
  /** Prompt tokens read at the full price (not from a cache). */
  readonly input: UsdAmount
  /** Tokens the model wrote. */
  readonly output: UsdAmount
  /** Prompt tokens read from the provider's cache; the input price when unset. */
  readonly cacheRead?: UsdAmount | undefined
  /** Prompt tokens written to the provider's cache; the input price when unset. */
  readonly cacheWrite?: UsdAmount | undefined
  /** Reasoning tokens (part of the output); the output price when unset. */
  readonly reasoning?: UsdAmount | undefined
}

const DECIMAL_TEXT = /^\d+(\.\d+)?$/

const perMillion = z.union([z.string(), z.number()]).transform((value, context) => {
  const valid = typeof value === 'number' ? Number.isFinite(value) && value >= 0 : DECIMAL_TEXT.test(value.trim())
  if (!valid) {
    context.addIssue({ code: 'custom', message: `must be a decimal number of dollars per million tokens at or above 0, as "3" or "0.30", got ${JSON.stringify(value)}` })
    return z.NEVER
  }
  return new Usd(typeof value === 'number' ? value : value.trim())
})

const ModelPriceSchema = z.strictObject({
  input: perMillion,
  output: perMillion,
  cacheRead: perMillion.optional(),
  cacheWrite: perMillion.optional(),
  reasoning: perMillion.optional(),
})

/**
 * A price table as a file or option holds it: dollars per million tokens per
 * model, keyed by `provider/model` or the bare model id. Prices are decimal
 * strings or numbers.
 *
 * @example
 * ```json
 * { "models": { "claude-sonnet-4-5": { "input": "3", "output": "15", "cacheRead": "0.3", "cacheWrite": "3.75" } } }
 * ```
 */
export const PriceFileSchema = z.strictObject({
  models: z.record(z.string().min(1, 'a model key must not be empty'), ModelPriceSchema),
})

/** A price table as it is written, before it is read. */
export type PriceFileInput = z.input<typeof PriceFileSchema>

/** A read price table: each key's prices as decimals. */
export interface PriceFile {
  readonly models: Readonly<Record<string, ModelPrice>>
}

function fieldOf(path: readonly PropertyKey[]): string {
  let field = ''
  for (const [index, part] of path.entries()) {
    if (index === 1 && path[0] === 'models') field += `[${JSON.stringify(String(part))}]`
    else field += field === '' ? String(part) : `.${String(part)}`
  }
  return field === '' ? 'the price table' : field
}

/**
 * Reads a price table from parsed JSON or from its text. Every problem is
 * named with its field (`models["gpt-x"].input must be …`); nothing is
 * guessed. `source` (a file name) starts the message.
 */
export function parsePriceFile(value: unknown, source?: string): PriceFile {
  let parsed = value
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value) as unknown
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error)
      throw new CostError('PRICE_FILE_INVALID', [{ field: 'the price table', message: `the price table is not JSON (${detail}); write it as { "models": { "<model>": { "input": "3", "output": "15" } } }` }], source)
    }
  }
  const result = PriceFileSchema.safeParse(parsed)
  if (!result.success) {
    const issues = result.error.issues.map((issue): CostIssue => {
      const field = fieldOf(issue.path)
      const message = issue.code === 'custom' ? `${field} ${issue.message}` : `${field}: ${issue.message}`
      return { field, message }
    })
    throw new CostError('PRICE_FILE_INVALID', issues as [CostIssue, ...CostIssue[]], source)
  }
  return result.data
}
