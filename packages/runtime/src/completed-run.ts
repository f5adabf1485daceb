import { closeSync, fstatSync, openSync, readSync } from 'node:fs'
import { type JournalLine, parseJournalLine } from '@locus/journal'
import { RunCompletedError } from './errors.js'

/**
 * Refuses a resume of a run whose latest execution ends with a completed
 * `run_end`. Called once the run is claimed (its lock or lease held), so the
 * answer cannot be overtaken by another resume.
 */
export function refuseCompleted(runId: string, latestExecutionId: string, lastLine: JournalLine | undefined): void {
  if (lastLine?.type === 'run_end' && lastLine.disposition === 'completed') throw new RunCompletedError(runId, latestExecutionId)
}

/** The last complete, valid line of a journal file, read from its end; undefined when there is none. */
export function lastJournalLine(journalPath: string): JournalLine | undefined {
  let fd: number
  try {
    fd = openSync(journalPath, 'r')
  } catch {
    return undefined
  }
  try {
    const size = fstatSync(fd).size
    // A run_end carries the result, so read back far enough for a large one.
    for (let span = 64 * 1024; ; span *= 4) {
      const start = Math.max(0, size - span)
      const buffer = Buffer.alloc(size - start)
      readSync(fd, buffer, 0, buffer.length, start)
      const lines = buffer.toString('utf8').split('\n')
      // The first piece may be cut (unless the read began at 0); the last is empty or torn.
      const whole = start === 0 ? lines : lines.slice(1)
      for (let index = whole.length - 1; index >= 0; index -= 1) {
        const text = whole[index]?.trim() ?? ''
        if (text === '') continue
        try {
          return parseJournalLine(JSON.parse(text))
        } catch {
          // A torn last line (a crash mid-write): look at the one before.
        }
      }
      if (start === 0) return undefined
    }
  } finally {
    closeSync(fd)
  }
}
