import { mkdtempSync, readFileSync, writeFileSync, appendFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { JournalClosedError, JournalWriterOptionsError } from './journal-file-errors.js'
import { JournalLineError } from './journal-line-error.js'
import { JOURNAL_LINE_TYPES } from './journal-line-schema.js'
import { createJournalWriter, type JournalWriterOptions } from './journal-writer.js'
import { readJournal } from './read-journal.js'
import { SAMPLE_INPUTS } from '../test/sample-lines.js'

function journalPath(): string {
  return join(mkdtempSync(join(tmpdir(), 'locus-journal-')), 'nested', 'journal.jsonl')
}

/** A clock the test moves by hand. */
function manualClock(start = Date.parse('2026-09-22T16:21:00.000Z')): { now: () => Date; advance: (ms: number) => void } {
  let current = start
  return { now: () => new Date(current), advance: (ms) => (current += ms) }
}

const base: JournalWriterOptions = { runId: 'run-1', executionId: 'run-1' }
const log = SAMPLE_INPUTS.log

afterEach(() => {
  vi.useRealTimers()
})

describe('createJournalWriter', () => {
  it('stamps v, seq, ts, runId and executionId, with seq strictly increasing from 1', () => {
    const path = journalPath()
    const clock = manualClock()
    const writer = createJournalWriter(path, { ...base, now: clock.now })
    const first = writer.append(log)
    clock.advance(5)
    const second = writer.append(SAMPLE_INPUTS.tool_start)
    writer.close()
    expect(first).toMatchObject({ v: 1, seq: 1, ts: '2026-09-22T16:21:00.000Z', runId: 'run-1', executionId: 'run-1', type: 'log' })
    expect(second).toMatchObject({ seq: 2, ts: '2026-09-22T16:21:00.005Z' })
    expect(writer.lastSeq).toBe(2)
    expect(readJournal(path).lines).toStrictEqual([first, second])
  })

  it('round trip: every line type written by the writer reads back equal', () => {
    const path = journalPath()
    const writer = createJournalWriter(path, base)
    const written = JOURNAL_LINE_TYPES.map((type) => writer.append(SAMPLE_INPUTS[type]))
    writer.close()
    const read = readJournal(path)
    expect(read).toMatchObject({ tornTail: null, invalid: [], outOfOrder: [] })
    expect(read.lines).toStrictEqual(written)
  })

  it('a caller cannot override the common fields', () => {
    const writer = createJournalWriter(journalPath(), base)
    const line = writer.append({ ...log, seq: 99, runId: 'other', v: 7 } as never)
    writer.close()
    expect(line).toMatchObject({ seq: 1, runId: 'run-1', v: 1 })
  })

  it('refuses an invalid line with JournalLineError, writes nothing and does not use up a seq', () => {
    const path = journalPath()
    const writer = createJournalWriter(path, base)
    expect(() => writer.append({ ...SAMPLE_INPUTS.agent_start, logicalCallId: undefined } as never)).toThrow(JournalLineError)
    expect(writer.append(log).seq).toBe(1)
    writer.close()
    expect(readJournal(path).lines).toHaveLength(1)
  })

  it('writing after close is an error, not a silent drop', () => {
    const path = journalPath()
    const writer = createJournalWriter(path, base)
    writer.append(log)
    writer.close()
    expect(() => writer.append(log)).toThrow(JournalClosedError)
    expect(() => writer.append(log)).toThrow(/Cannot append a log line to .*journal.jsonl: the journal writer is closed/)
    expect(writer.closed).toBe(true)
    writer.close()
    expect(readJournal(path).lines).toHaveLength(1)
  })

  it('append-only: a second writer continues after the existing lines and never rewrites them', () => {
    const path = journalPath()
    const first = createJournalWriter(path, base)
    first.append(log)
    first.append(log)
    first.close()
    const before = readFileSync(path, 'utf8')
    const second = createJournalWriter(path, base)
    expect(second.append(log).seq).toBe(3)
    second.close()
    const after = readFileSync(path, 'utf8')
    expect(after.startsWith(before)).toBe(true)
    expect(readJournal(path).lines.map((line) => line.seq)).toEqual([1, 2, 3])
  })

  it('after a crash left a partial line, a new writer ends that line first so its own lines stay whole', () => {
    const path = journalPath()
    const first = createJournalWriter(path, base)
    first.append(log)
    first.close()
    appendFileSync(path, '{"v":1,"seq":2,"ty')
    const second = createJournalWriter(path, base)
    second.append(log)
    second.close()
    const read = readJournal(path)
    expect(read.lines.map((line) => line.seq)).toEqual([1, 2])
    expect(read.invalid).toEqual([expect.objectContaining({ lineNumber: 2, text: '{"v":1,"seq":2,"ty' })])
    expect(read.tornTail).toBeNull()
  })

  it('startSeq sets the first seq', () => {
    const writer = createJournalWriter(journalPath(), { ...base, startSeq: 40 })
    expect(writer.append(log).seq).toBe(40)
    writer.close()
  })

  it('calls onLine with each line once it is in the journal', () => {
    const seen: number[] = []
    const path = journalPath()
    const writer = createJournalWriter(path, {
      ...base,
      onLine: (line) => {
        seen.push(line.seq)
        expect(readFileSync(path, 'utf8')).toContain(`"seq":${line.seq},`)
      },
    })
    writer.append(log)
    writer.append(log)
    writer.close()
    expect(seen).toEqual([1, 2])
  })

  it('refuses bad options, naming the field', () => {
    expect(() => createJournalWriter(journalPath(), { ...base, durability: 'always' as never })).toThrow(JournalWriterOptionsError)
    expect(() => createJournalWriter(journalPath(), { ...base, batchLines: 0 })).toThrow(/batchLines/)
    expect(() => createJournalWriter(journalPath(), { runId: '', executionId: 'x' })).toThrow(/runId/)
  })
})

describe('durability', () => {
  it('line: every line is written and fsynced before append returns', () => {
    const path = journalPath()
    const writer = createJournalWriter(path, { ...base, durability: 'line' })
    writer.append(log)
    expect(writer.syncCount).toBe(1)
    expect(readJournal(path).lines).toHaveLength(1)
    writer.append(log)
    expect(writer.syncCount).toBe(2)
    writer.close()
  })

  it('batch (the default): each line reaches the file at once; fsync every batchLines lines', () => {
    const path = journalPath()
    const writer = createJournalWriter(path, { ...base, batchLines: 3, batchMs: 60_000, now: manualClock().now })
    expect(writer.durability).toBe('batch')
    writer.append(log)
    writer.append(log)
    expect(readJournal(path).lines).toHaveLength(2)
    expect(writer.syncCount).toBe(0)
    writer.append(log)
    expect(writer.syncCount).toBe(1)
    writer.close()
  })

  it('batch: fsync once batchMs has passed since the oldest unsynced line (injected clock)', () => {
    const clock = manualClock()
    const writer = createJournalWriter(journalPath(), { ...base, batchLines: 1000, batchMs: 100, now: clock.now })
    writer.append(log)
    clock.advance(99)
    writer.append(log)
    expect(writer.syncCount).toBe(0)
    clock.advance(1)
    writer.append(log)
    expect(writer.syncCount).toBe(1)
    writer.close()
  })

  it('batch: an idle tail is fsynced by a timer within batchMs', () => {
    vi.useFakeTimers()
    const writer = createJournalWriter(journalPath(), { ...base, batchLines: 1000, batchMs: 100, now: manualClock().now })
    writer.append(log)
    vi.advanceTimersByTime(99)
    expect(writer.syncCount).toBe(0)
    vi.advanceTimersByTime(1)
    expect(writer.syncCount).toBe(1)
    writer.close()
  })

  it('none: lines are buffered, written by flush() or close(), and never fsynced', () => {
    const path = journalPath()
    const writer = createJournalWriter(path, { ...base, durability: 'none' })
    writer.append(log)
    writer.append(log)
    expect(existsSync(path) ? readFileSync(path, 'utf8') : '').toBe('')
    writer.flush()
    expect(readJournal(path).lines).toHaveLength(2)
    writer.append(log)
    writer.close()
    expect(readJournal(path).lines).toHaveLength(3)
    expect(writer.syncCount).toBe(0)
  })

  it('flush() fsyncs pending lines in batch mode; close() flushes', () => {
    const writer = createJournalWriter(journalPath(), { ...base, batchLines: 1000, batchMs: 60_000, now: manualClock().now })
    writer.append(log)
    writer.flush()
    expect(writer.syncCount).toBe(1)
    writer.flush()
    expect(writer.syncCount).toBe(1)
    writer.append(log)
    writer.close()
    expect(writer.syncCount).toBe(2)
  })

  it('never writes a blank or partial line of its own', () => {
    const path = journalPath()
    const writer = createJournalWriter(path, { ...base, durability: 'none' })
    for (let index = 0; index < 2000; index += 1) writer.append({ ...log, message: `line ${index} ${'x'.repeat(index % 50)}` })
    writer.close()
    const text = readFileSync(path, 'utf8')
    expect(text.endsWith('\n')).toBe(true)
    expect(text.split('\n').filter((line) => line === '')).toHaveLength(1)
    expect(readJournal(path).lines).toHaveLength(2000)
  })
})

describe('a journal that already exists', () => {
  it('continues seq after a complete line that only lacked its newline', () => {
    const path = journalPath()
    const writer = createJournalWriter(path, base)
    const line = writer.append(log)
    writer.close()
    writeFileSync(path, JSON.stringify({ ...line, seq: 2 }), { flag: 'a' })
    const next = createJournalWriter(path, base)
    expect(next.append(log).seq).toBe(3)
    next.close()
    expect(readJournal(path).lines.map((entry) => entry.seq)).toEqual([1, 2, 3])
  })
})
