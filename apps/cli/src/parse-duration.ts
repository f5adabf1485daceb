import { DURATION_FORMS, durationMs } from '@locus/runtime'
import { CliError } from './cli-error.js'

/**
 * Reads a duration such as `500ms`, `30s`, `10m`, `1h` or `30d` and returns
 * milliseconds (rounded to a whole number), by `durationMs` of
 * `@locus/runtime`, so the server reads the same text. A bare number is
 * refused, since nobody can tell whether `10` meant seconds or minutes.
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
  const milliseconds = durationMs(text)
  if (milliseconds === undefined) throw new CliError('CLI_USAGE', `${flag} must be a duration such as ${DURATION_FORMS}; got ${JSON.stringify(text)}.`)
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
