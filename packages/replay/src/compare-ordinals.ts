const ZERO = 48
const NINE = 57

function isDigit(code: number): boolean {
  return code >= ZERO && code <= NINE
}

function digitRunEnd(text: string, start: number): number {
  let end = start
  while (end < text.length && isDigit(text.charCodeAt(end))) end += 1
  return end
}

function skipZeros(text: string, start: number, end: number): number {
  let index = start
  // Keep the last digit of a run of zeros: "000" is the number 0, one digit long.
  while (index < end - 1 && text.charCodeAt(index) === ZERO) index += 1
  return index
}

/**
 * Orders two ordinals naturally, for reports: runs of digits compare as
 * numbers of any length (`"2" < "10"`), other characters by code unit, and a
 * prefix comes before what extends it (`"2" < "2[3].1"`). A run of digits
 * sorts before any other character at the same position. Only equal strings
 * compare as 0 (`"01"` and `"1"` are told apart by code unit last), so this is
 * a total order fit for `Array.prototype.sort`. Ordinals stay opaque keys
 * everywhere else; this order only decides how they are listed.
 *
 * @returns a negative number, 0, or a positive number, as `Array.prototype.sort` expects.
 *
 * @example
 * ```ts
 * ['10', '2[3].1', '2', 'g1[2].1'].sort(compareOrdinals) // => ['2', '2[3].1', '10', 'g1[2].1']
 * ```
 */
export function compareOrdinals(left: string, right: string): number {
  if (left === right) return 0
  let leftIndex = 0
  let rightIndex = 0
  while (leftIndex < left.length && rightIndex < right.length) {
    const leftCode = left.charCodeAt(leftIndex)
    const rightCode = right.charCodeAt(rightIndex)
    const leftIsDigit = isDigit(leftCode)
    const rightIsDigit = isDigit(rightCode)
    if (leftIsDigit && rightIsDigit) {
      const leftEnd = digitRunEnd(left, leftIndex)
      const rightEnd = digitRunEnd(right, rightIndex)
      const leftStart = skipZeros(left, leftIndex, leftEnd)
      const rightStart = skipZeros(right, rightIndex, rightEnd)
      const lengthDifference = leftEnd - leftStart - (rightEnd - rightStart)
      if (lengthDifference !== 0) return lengthDifference
      for (let offset = 0; offset < leftEnd - leftStart; offset += 1) {
        const difference = left.charCodeAt(leftStart + offset) - right.charCodeAt(rightStart + offset)
        if (difference !== 0) return difference
      }
      leftIndex = leftEnd
      rightIndex = rightEnd
      continue
    }
    if (leftIsDigit !== rightIsDigit) return leftIsDigit ? -1 : 1
    if (leftCode !== rightCode) return leftCode - rightCode
    leftIndex += 1
    rightIndex += 1
  }
  const leftRest = left.length - leftIndex
  const rightRest = right.length - rightIndex
  if (leftRest !== rightRest) return leftRest - rightRest
  // Equal in value but spelled differently ("01" and "1"): code units decide, so the order stays total.
  return left < right ? -1 : 1
}
