import { CliError } from './cli-error.js'

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
const DURATION_PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/

/**
 * Reads a duration such as `500ms`, `30s`, `10m`, `1h` or `30d` and returns
 * milliseconds (rounded to a whole number). A bare number is refused, since
 * nobody can tell whether `10` meant seconds or minutes.
 *
 * @param flag - the flag the text came from, named in the error.
 * @throws {CliError} `CLI_USAGE` naming the flag and the accepted forms.
 *
 * @example
 * ```ts
 * parseDuration('10m') // 600000
 * parseDuration('1.5s') // 1500
 * ```
 */
export function parseDuration(text: string, flag = 'duration'): number {
  const match = DURATION_PATTERN.exec(text.trim())
  const unit = match?.[2] as keyof typeof UNIT_MS | undefined
  const amount = match === null ? Number.NaN : Number(match[1])
  if (unit === undefined || !Number.isFinite(amount)) {
    throw new CliError('CLI_USAGE', `${flag} must be a duration such as 500ms, 30s, 10m, 1h or 30d; got ${JSON.stringify(text)}.`)
  }
  const milliseconds = Math.round(amount * UNIT_MS[unit])
  if (milliseconds <= 0) throw new CliError('CLI_USAGE', `${flag} must be longer than zero; got ${JSON.stringify(text)}.`)
  return milliseconds
}

/**
 * Reads a whole number of at least 1 from a flag.
 *
 * @throws {CliError} `CLI_USAGE` naming the flag.
 */
export function parsePositiveInteger(text: string, flag: string): number {
  const value = Number(text)
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < 1) {
    throw new CliError('CLI_USAGE', `${flag} must be a whole number of at least 1; got ${JSON.stringify(text)}.`)
  }
  return value
}
