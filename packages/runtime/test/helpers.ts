import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type JournalLine, readJournal } from '@locus/journal'
import { afterEach } from 'vitest'
import type { RunResult } from '@locus/runtime'

const created: string[] = []
afterEach(() => {
  for (const directory of created.splice(0)) rmSync(directory, { recursive: true, force: true })
})

/** A fresh runs directory that is removed after the test. */
export function tempRunsDir(): string {
  const directory = mkdtempSync(join(tmpdir(), 'locus-runtime-'))
  created.push(directory)
  return directory
}

/** Everything a finished run left on disk. */
export function readRun(run: Pick<RunResult, 'runDir'>): {
  lines: JournalLine[]
  resultFile: { disposition: string; ok: boolean; result: unknown; error?: { code: string; message: string } }
  readme: string
} {
  const journal = readJournal(join(run.runDir, 'journal.jsonl'))
  if (journal.invalid.length > 0 || journal.tornTail !== null) throw new Error(`journal not clean: ${JSON.stringify(journal.invalid)}`)
  return {
    lines: journal.lines,
    resultFile: JSON.parse(readFileSync(join(run.runDir, 'result.json'), 'utf8')) as never,
    readme: readFileSync(join(run.runDir, 'outputs', 'README.md'), 'utf8'),
  }
}

export function linesOfType<TType extends JournalLine['type']>(lines: readonly JournalLine[], type: TType): Extract<JournalLine, { type: TType }>[] {
  return lines.filter((line): line is Extract<JournalLine, { type: TType }> => line.type === type)
}

/** Lets queued callbacks and I/O completions run, without moving any clock. */
export async function settle(rounds = 5): Promise<void> {
  for (let round = 0; round < rounds; round += 1) await new Promise((resolve) => setImmediate(resolve))
}
