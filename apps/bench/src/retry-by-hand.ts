import { isRetryable } from './flaky-tool.js'

/**
 * The retry loop a careful author writes by hand: up to `maxAttempts`
 * attempts, the next one at once, only for failures marked retryable.
 * `onRetry` counts the retries.
 */
export async function retryByHand<T>(operation: () => Promise<T>, maxAttempts: number, onRetry: () => void): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await operation()
    } catch (error) {
      if (attempt >= maxAttempts || !isRetryable(error)) throw error
      onRetry()
    }
  }
}
