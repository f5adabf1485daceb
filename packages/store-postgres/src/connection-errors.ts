/**
 * Errors that mean the database could not be reached or dropped the session
 * (a restart, a failover, a network cut), as opposed to errors of the query
 * itself: these are retried with backoff, never treated as the query's answer.
 */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'])

/** True when `error` says the connection to PostgreSQL failed, not the statement. */
export function isConnectionError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { code, message } = error as { code?: unknown; message?: unknown }
  if (typeof code === 'string') {
    if (CONNECTION_CODES.has(code)) return true
    // 08: connection exception; 57P01-57P03: admin shutdown, crash shutdown, cannot connect now (starting up).
    if (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03') return true
  }
  return typeof message === 'string' && /Connection terminated|connection is closed|Client has encountered a connection error|timeout exceeded when trying to connect/i.test(message)
}

/** Backoff before the `attempt`-th retry (1-based): 50 ms doubling to at most 2 s. */
export function reconnectDelayMs(attempt: number): number {
  return Math.min(2000, 50 * 2 ** Math.min(attempt - 1, 6))
}

/**
 * Runs `operation`, retrying it with backoff while it fails with a connection
 * error, for at most `forMs` in all; any other error, and the last connection
 * error after `forMs`, is thrown. `onWait` is told once per outage.
 */
export async function withReconnect<T>(operation: (attempt: number) => Promise<T>, forMs: number, onWait?: (error: unknown) => void): Promise<T> {
  const started = performance.now()
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await operation(attempt)
    } catch (error) {
      if (!isConnectionError(error) || performance.now() - started >= forMs) throw error
      if (attempt === 1) onWait?.(error)
      await new Promise((resolve) => setTimeout(resolve, reconnectDelayMs(attempt)))
    }
  }
}
