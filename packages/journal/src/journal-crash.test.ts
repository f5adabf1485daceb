import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { readJournal } from './read-journal.js'
import type { JournalDurability } from './journal-writer.js'

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..')
const fixture = join(packageDir, 'test', 'fixtures', 'crash-writer.ts')

/** Runs the writer in a real child process and SIGKILLs it once it reported `killAfterSeq`. */
function killMidStream(path: string, durability: JournalDurability, killAfterSeq: number): Promise<{ lastReportedSeq: number; signal: string | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', fixture, path, durability], {
      cwd: packageDir,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let lastReportedSeq = 0
    let pending = ''
    let stderr = ''
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (chunk: string) => {
      pending += chunk
      const parts = pending.split('\n')
      pending = parts.pop() ?? ''
      for (const part of parts) lastReportedSeq = Math.max(lastReportedSeq, Number(part))
      if (lastReportedSeq >= killAfterSeq && child.exitCode === null && !child.killed) child.kill('SIGKILL')
    })
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.on('error', reject)
    child.on('exit', (_code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`the writer exited without being killed (signal ${String(signal)}): ${stderr}`))
      else resolve({ lastReportedSeq, signal })
    })
  })
}

describe('a writer killed with SIGKILL mid-stream', () => {
  it.each(['batch', 'line', 'none'] as const)(
    'durability %s: every complete line reads back, in order, with no gap',
    async (durability) => {
      const path = join(mkdtempSync(join(tmpdir(), 'locus-crash-')), 'journal.jsonl')
      const { lastReportedSeq } = await killMidStream(path, durability, durability === 'line' ? 60 : 600)
      const read = readJournal(path)
      expect(read.invalid).toEqual([])
      expect(read.outOfOrder).toEqual([])
      const seqs = read.lines.map((line) => line.seq)
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, index) => index + 1))
      expect(read.lines[0]?.type).toBe('run_start')
      if (read.tornTail !== null) expect(read.tornTail.byteOffset).toBeGreaterThan(0)
      // batch and line write each line through before append returns, so a process crash loses none of them.
      if (durability !== 'none') expect(seqs.length).toBeGreaterThanOrEqual(lastReportedSeq)
    },
    30_000,
  )
})
