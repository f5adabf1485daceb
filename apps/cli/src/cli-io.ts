/** Where `locus` writes: a stream with a `write` and, on a terminal, `isTTY` and `columns`. */
export interface OutputStream {
  write(text: string): unknown
  readonly isTTY?: boolean | undefined
  readonly columns?: number | undefined
}

/**
 * Everything `locus` reads from and writes to its process, so commands can be
 * run from code and tests with their own streams, environment and directory.
 */
export interface CliIo {
  readonly stdout: OutputStream
  readonly stderr: OutputStream
  readonly env: Readonly<Record<string, string | undefined>>
  readonly cwd: string
  /**
   * Subscribes to Ctrl-C (SIGINT); returns the unsubscribe function. While a
   * subscription is active, the default "exit at once" behaviour is off.
   */
  onInterrupt(handler: () => void): () => void
  /** Ends the process at once with this code (the second Ctrl-C). */
  exit(code: number): void
}

/**
 * The io of the real process: its stdout, stderr, environment, directory and
 * SIGINT. Run as the repository's `locus` script (`npm run locus -- <args>`),
 * the directory is the one the command was typed in (`INIT_CWD`), not the
 * repository root npm moves to, so relative paths mean what they say.
 */
export function processIo(): CliIo {
  const typedIn = process.env.npm_lifecycle_event === 'locus' ? process.env.INIT_CWD : undefined
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: typedIn === undefined || typedIn === '' ? process.cwd() : typedIn,
    onInterrupt(handler) {
      process.on('SIGINT', handler)
      return () => {
        process.off('SIGINT', handler)
      }
    },
    exit(code) {
      process.exit(code)
    },
  }
}
