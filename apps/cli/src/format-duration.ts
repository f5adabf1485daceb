/**
 * A duration for people: `850ms`, `4.2s`, `3m 05s`, `2h 10m`.
 *
 * @example
 * ```ts
 * formatDuration(4_200) // '4.2s'
 * ```
 */
export function formatDuration(milliseconds: number): string {
  if (!Number.isFinite(milliseconds) || milliseconds < 0) return '?'
  if (milliseconds < 1_000) return `${Math.round(milliseconds)}ms`
  if (milliseconds < 60_000) return `${(milliseconds / 1_000).toFixed(1)}s`
  const totalSeconds = Math.floor(milliseconds / 1_000)
  if (totalSeconds < 3_600) return `${Math.floor(totalSeconds / 60)}m ${String(totalSeconds % 60).padStart(2, '0')}s`
  const totalMinutes = Math.floor(totalSeconds / 60)
  return `${Math.floor(totalMinutes / 60)}h ${String(totalMinutes % 60).padStart(2, '0')}m`
}
