import type { CliIo } from './cli-io.js'
import { EXIT_CODES } from './exit-codes.js'

/**
 * Ctrl-C while a run is live. The first one is host cancellation: `cancel()`
 * is called, started calls settle, and the run ends `cancelled` with its
 * journal closed. The second exits at once with 130; the journal keeps every
 * line written so far (with durability `batch` or `line` each line is
 * written before the next starts) and the run can be resumed.
 *
 * @returns a function that removes the handler.
 */
export function cancelOnInterrupt(io: CliIo, cancel: () => void, flush?: () => void): () => void {
  let interrupts = 0
  return io.onInterrupt(() => {
    interrupts += 1
    if (interrupts === 1) {
      io.stderr.write('\nlocus: cancelling: started calls settle, then the run ends as cancelled. Press Ctrl-C again to exit at once.\n')
      cancel()
      return
    }
    try {
      flush?.()
    } catch {
      // Exiting at once matters more than a buffered line; the journal keeps every line already written.
    }
    io.stderr.write('\nlocus: exiting now; the journal holds every line written so far. `locus resume <runId>` continues the run.\n')
    io.exit(EXIT_CODES.cancelled)
  })
}
