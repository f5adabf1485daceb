/** The longest wait a `Retry-After` header may ask for before it is read as garbage: one day. */
const LONGEST_RETRY_AFTER_MS = 24 * 60 * 60 * 1000

function headerValue(headers: Readonly<Record<string, string | undefined>>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name && value !== undefined) return value.trim()
  }
  return undefined
}

/**
 * Reads how long a server asked the client to wait, in milliseconds, from
 * `retry-after-ms` (OpenAI's, fractional milliseconds) or `Retry-After`
 * (whole seconds, or an HTTP date compared with `wallNowMs`). Returns
 * `undefined` when neither is present, parseable, non-negative and at most a day.
 *
 * @param wallNowMs wall-clock time an HTTP date is measured from. @default Date.now()
 * @example
 * ```ts
 * parseRetryAfterMs({ 'retry-after': '7' }) // 7000
 * ```
 */
export function parseRetryAfterMs(headers: Readonly<Record<string, string | undefined>> | undefined, wallNowMs: number = Date.now()): number | undefined {
  if (headers === undefined) return undefined
  const inMs = headerValue(headers, 'retry-after-ms')
  if (inMs !== undefined && inMs !== '') {
    const value = Number(inMs)
    if (Number.isFinite(value) && value >= 0 && value <= LONGEST_RETRY_AFTER_MS) return value
  }
  const raw = headerValue(headers, 'retry-after')
  if (raw === undefined || raw === '') return undefined
  if (/^\d+(\.\d+)?$/.test(raw)) {
    const value = Number(raw) * 1000
    return value <= LONGEST_RETRY_AFTER_MS ? value : undefined
  }
  // An HTTP date names its weekday and month; without letters, Date.parse would read '-5' as a year.
  if (!/[a-z]/i.test(raw)) return undefined
  const date = Date.parse(raw)
  if (Number.isNaN(date)) return undefined
  const value = Math.max(0, date - wallNowMs)
  return value <= LONGEST_RETRY_AFTER_MS ? value : undefined
}
