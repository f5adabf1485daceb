/**
 * Renders a received value for an error message: numbers as written (`NaN`,
 * `-1`, `2.5`), strings quoted, and other values by their kind, so that
 * `got "3"` and `got 3` read differently.
 */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'undefined'
  if (value === null) return 'null'
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return typeof value === 'bigint' ? `${value.toString()}n` : String(value)
  }
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value)
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'function') return 'a function'
  if (typeof value === 'symbol') return 'a symbol'
  return 'an object'
}
