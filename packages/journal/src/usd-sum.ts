/**
 * Adds two dollar amounts written as non-negative decimal strings (as the
 * journal writes costs), exactly: the digits are added as integers, never as
 * floats, so a run's total is the sum of its lines to the last place.
 *
 * @example addUsd('0.004210', '0.000790') // '0.005000'
 */
export function addUsd(a: string, b: string): string {
  const [aWhole = '0', aFraction = ''] = a.split('.')
  const [bWhole = '0', bFraction = ''] = b.split('.')
  const places = Math.max(aFraction.length, bFraction.length, 6)
  const scaled = (whole: string, fraction: string): bigint => BigInt(whole + fraction.padEnd(places, '0'))
  const sum = (scaled(aWhole, aFraction) + scaled(bWhole, bFraction)).toString().padStart(places + 1, '0')
  return `${sum.slice(0, -places)}.${sum.slice(-places)}`
}

/**
 * Subtracts a dollar amount from a larger one, both non-negative decimal
 * strings, exactly; never below zero.
 *
 * @example subtractUsd('0.005000', '0.000790') // '0.004210'
 */
export function subtractUsd(a: string, b: string): string {
  const [aWhole = '0', aFraction = ''] = a.split('.')
  const [bWhole = '0', bFraction = ''] = b.split('.')
  const places = Math.max(aFraction.length, bFraction.length, 6)
  const scaled = (whole: string, fraction: string): bigint => BigInt(whole + fraction.padEnd(places, '0'))
  const difference = scaled(aWhole, aFraction) - scaled(bWhole, bFraction)
  const text = (difference < 0n ? 0n : difference).toString().padStart(places + 1, '0')
  return `${text.slice(0, -places)}.${text.slice(-places)}`
}
