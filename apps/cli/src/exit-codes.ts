import type { RunDisposition } from '@locus/outcome'

/**
 * The exit codes of `locus`, one per way a command can end. A run's code
 * follows its disposition, so a partial answer (a `failed` run) exits 1.
 */
export const EXIT_CODES = {
  /** The run completed, or the command did what it was asked. */
  completed: 0,
  /** The run failed (a partial result included), or a replay diverged. */
  failed: 1,
  /** A usage or input error: nothing ran. */
  usage: 2,
  /** The run was cancelled (Ctrl-C): 128 + SIGINT, as shells expect. */
  cancelled: 130,
} as const

/** One of the {@link EXIT_CODES} values. */
export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES]

/**
 * The exit code a run with this disposition ends the process with.
 *
 * @example
 * ```ts
 * exitCodeOf('failed') // 1
 * ```
 */
export function exitCodeOf(disposition: RunDisposition): ExitCode {
  return EXIT_CODES[disposition]
}
