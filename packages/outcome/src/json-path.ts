const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/**
 * Formats a path from the root into a value as `$.items[3].size`. Keys that
 * are not identifiers are quoted: `$["content-type"]`.
 */
export function formatJsonPath(segments: readonly (string | number)[]): string {
  let path = '$'
  for (const segment of segments) {
    if (typeof segment === 'number') path += `[${segment}]`
    else if (IDENTIFIER.test(segment)) path += `.${segment}`
    else path += `[${JSON.stringify(segment)}]`
  }
  return path
}
