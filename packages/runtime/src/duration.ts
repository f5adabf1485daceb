const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
const DURATION_PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/

/** The forms {@link durationMs} reads, for error messages. */
export const DURATION_FORMS = '500ms, 30s, 10m, 1h or 30d'

/**
 * Reads a duration such as `500ms`, `30s`, `10m`, `1h` or `7d` as whole
 * milliseconds, or `undefined` when the text is not one or is not longer
 * than zero. A bare number is not a duration: nobody can tell whether `10`
 * meant seconds or minutes. The CLI's `--since` and the server's
 * `POST /v1/deploy-check` read periods with it, so both accept the same text.
 *
 * @example
 * ```ts
 * durationMs('7d') // 604800000
 * durationMs('1.5s') // 1500
 * durationMs('10') // undefined
 * ```
 */
export function durationMs(text: string): number | undefined {
  const match = DURATION_PATTERN.exec(text.trim())
  const unit = match?.[2] as keyof typeof UNIT_MS | undefined
  if (match === null || unit === undefined) return undefined
  const milliseconds = Math.round(Number(match[1]) * UNIT_MS[unit])
  return Number.isFinite(milliseconds) && milliseconds > 0 ? milliseconds : undefined
}
