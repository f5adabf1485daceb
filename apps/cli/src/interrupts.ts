import { abortAs } from '@locus/runtime'
import type { CliIo } from './cli-io.js'
import { holdLiveRun } from './live-runs.js'
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

/** What {@link interruptExecution} gives a command: where its execution is aborted, how to name it once it started, and how to stop listening. */
export interface ExecutionInterrupts {
  /** Aborted by the first Ctrl-C, and by a reader of stdout that went away. */
  readonly signal: AbortSignal
  /** Names the execution once it has started, so the second Ctrl-C flushes its buffered lines before exiting. */
  started(execution: { flush(): void }): void
  /** Removes the handlers; call it once the execution settled. */
  stop(): void
}

/**
 * Ctrl-C for a resume or a replay, whose execution exists only once it has
 * started: the first cancels it through `signal`, the second flushes it (when
 * it has started) and exits. The process is held open until `stop()`, so an
 * execution waiting on a hung host turn keeps its process.
 */
export function interruptExecution(io: CliIo): ExecutionInterrupts {
  const controller = new AbortController()
  let execution: { flush(): void } | undefined
  const stopInterrupts = cancelOnInterrupt(
    io,
    () => {
      // Journaled as run_cancel_requested by `cli`.
      abortAs(controller, 'interrupted from the terminal (Ctrl-C)', 'cli')
    },
    () => {
      execution?.flush()
    },
  )
  const releaseRun = holdLiveRun((reason) => {
    abortAs(controller, reason, 'cli')
  })
  return {
    signal: controller.signal,
    started: (handle) => {
      execution = handle
    },
    stop: () => {
      releaseRun()
      stopInterrupts()
    },
  }
}
