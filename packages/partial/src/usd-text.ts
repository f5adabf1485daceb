/**
 * Dollar amounts as the outcome store keeps them: non-negative decimal
 * strings (as the journal writes costs), added as integers of their smallest
 * place, never as floats, so a report's sum is the sum of its runs exactly.
 */
const USD_TEXT = /^\d+(\.\d+)?$/

/** True for a non-negative decimal string such as `"0.004210"` or `"2"`. */
export function isUsdText(value: string): boolean {
  return USD_TEXT.test(value)
}

/**
 * The amount in its canonical form: at least six places, more only where a
 * digit needs them (`"0.0051"` → `"0.005100"`, `"0.00000050"` → `"0.0000005"`).
 */
export function canonicalUsd(text: string): string {
  const [whole = '0', fraction = ''] = text.split('.')
  const trimmed = fraction.replace(/0+$/, '')
  const wholeDigits = whole.replace(/^0+(?=\d)/, '')
  return `${wholeDigits === '' ? '0' : wholeDigits}.${trimmed.padEnd(6, '0')}`
}

/** An exact running sum of dollar amounts. */
export class UsdSum {
  private units = 0n
  private places = 6

  /** Adds one amount (a non-negative decimal string). */
  add(text: string): void {
    const [whole = '0', fraction = ''] = text.split('.')
    if (fraction.length > this.places) {
      this.units *= 10n ** BigInt(fraction.length - this.places)
      this.places = fraction.length
    }
    this.units += BigInt(whole + fraction.padEnd(this.places, '0'))
  }

  /** The sum in its canonical form. */
  toString(): string {
    const digits = this.units.toString().padStart(this.places + 1, '0')
    return canonicalUsd(`${digits.slice(0, -this.places)}.${digits.slice(-this.places)}`)
  }
}
