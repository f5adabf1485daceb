import { closeSync, openSync, readSync } from 'node:fs'
import { type JournalLine, parseJournalLine } from '@locus/journal'

/** Options of {@link followJournal}. */
export interface FollowOptions {
  /** Called with every complete line, old ones first, then new ones as they are written. */
  readonly onLine: (line: JournalLine) => void
  /** Called with a complete line that is not a valid journal line. */
  readonly onInvalid?: (text: string, error: unknown) => void
  /** Stops following; the promise resolves `false`. */
  readonly signal?: AbortSignal
  /** How often the file is checked for new bytes. @default 100 */
  readonly pollMs?: number
}

/**
 * Reads a journal and keeps reading it as it grows, like `tail -f`, until its
 * `run_end` line arrives (resolves `true`) or `signal` aborts (resolves
 * `false`). A partial last line waits for its newline; it is never shown torn.
 */
export function followJournal(path: string, options: FollowOptions): Promise<boolean> {
  const pollMs = options.pollMs ?? 100
  let offset = 0
  let pending = ''
  const buffer = Buffer.alloc(64 * 1024)

  /** Reads what was appended since the last call; true once run_end was seen. */
  const drain = (): boolean => {
    const fd = openSync(path, 'r')
    try {
      for (;;) {
        const read = readSync(fd, buffer, 0, buffer.length, offset)
        if (read === 0) break
        offset += read
        pending += buffer.toString('utf8', 0, read)
      }
    } finally {
      closeSync(fd)
    }
    let ended = false
    let newline = pending.indexOf('\n')
    while (newline !== -1) {
      const text = pending.slice(0, newline)
      pending = pending.slice(newline + 1)
      newline = pending.indexOf('\n')
      if (text.trim() === '') continue
      let line: JournalLine
      try {
        line = parseJournalLine(JSON.parse(text))
      } catch (error) {
        options.onInvalid?.(text, error)
        continue
      }
      options.onLine(line)
      if (line.type === 'run_end') ended = true
    }
    return ended
  }

  return new Promise((resolve, reject) => {
    try {
      if (drain()) {
        resolve(true)
        return
      }
    } catch (error) {
      reject(error instanceof Error ? error : new Error(String(error)))
      return
    }
    const timer = setInterval(() => {
      try {
        if (drain()) {
          finish(true)
        }
      } catch (error) {
        clearInterval(timer)
        reject(error instanceof Error ? error : new Error(String(error)))
      }
    }, pollMs)
    const onAbort = (): void => {
      finish(false)
    }
    const finish = (ended: boolean): void => {
      clearInterval(timer)
      options.signal?.removeEventListener('abort', onAbort)
      resolve(ended)
    }
    if (options.signal?.aborted === true) finish(false)
    else options.signal?.addEventListener('abort', onAbort, { once: true })
  })
}
