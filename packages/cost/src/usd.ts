import { Decimal } from 'decimal.js'
import { CostError } from './cost-errors.js'

/**
 * Dollars, as decimals: a Decimal constructor of its own, so the settings of
 * any other decimal.js user in the process never change how Locus rounds.
 * Token counts are integers and prices finite decimals, so every product and
 * sum this package makes is exact; nothing is rounded until it is shown.
 */
export const Usd = Decimal.clone({ precision: 60, rounding: Decimal.ROUND_HALF_UP, toExpNeg: -30, toExpPos: 30 })

/** An amount of dollars. */
export type UsdAmount = Decimal

const ZERO = new Usd(0)
// Multiplying by 10^-6 is exact and several times cheaper than dividing by a million in decimal.js.
const PER_MILLION = new Usd('0.000001')

/** No money. */
export const zeroUsd = (): UsdAmount => ZERO

/** The dollars `tokens` cost at `perMillion` dollars per million tokens. */
export function priceTokens(tokens: number, perMillion: UsdAmount): UsdAmount {
  if (tokens === 0) return ZERO
  return perMillion.mul(tokens).mul(PER_MILLION)
}

/**
 * The form amounts take in the journal and in every surface: a plain decimal
 * string with at least six places (`"0.004210"`), more when the amount needs
 * them to stay exact (`"0.00000005"`), never an exponent.
 */
export function formatUsd(amount: UsdAmount): string {
  return amount.toFixed(Math.max(6, amount.decimalPlaces()))
}

/** The amount for a person: `$2.50`, or `$0.0042` below a dollar (to the cent-fraction that shows it), `$0` for nothing. */
export function displayUsd(amount: UsdAmount): string {
  if (amount.isZero()) return '$0'
  if (amount.abs().gte(1)) return `$${amount.toFixed(2)}`
  return `$${amount.toDecimalPlaces(amount.abs().lt(0.01) ? 6 : 4).toString()}`
}

const DECIMAL_TEXT = /^\d+(\.\d+)?$/

/**
 * Reads a dollar amount given as a decimal string or a finite number. With
 * `positive`, zero is refused too. The error names `field`.
 */
export function parseUsd(value: unknown, field: string, { positive = false }: { readonly positive?: boolean } = {}): UsdAmount {
  const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : typeof value === 'string' ? value.trim() : undefined
  const amount = text !== undefined && DECIMAL_TEXT.test(text) ? new Usd(text) : typeof value === 'number' && Number.isFinite(value) && value >= 0 ? new Usd(value) : undefined
  if (amount === undefined || (positive && amount.isZero())) {
    const wanted = positive ? 'a positive decimal number of dollars, as "2.50"' : 'a decimal number of dollars at or above 0, as "0.30"'
    throw new CostError('COST_OPTIONS_INVALID', [{ field, message: `${field} must be ${wanted}, got ${typeof value === 'string' ? JSON.stringify(value) : String(value)}` }])
  }
  return amount
}
