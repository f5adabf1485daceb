import fc from 'fast-check'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { JournalReadError } from './journal-file-errors.js'
import { JournalLineSchema } from './journal-line-schema.js'
import { journalDamage, readJournal, readJournalAsync } from './read-journal.js'
import { SAMPLE_INPUTS, lineArbitrary, stamp } from '../test/sample-lines.js'

function fileWith(content: string | Buffer): string {
  const path = join(mkdtempSync(join(tmpdir(), 'locus-read-')), 'journal.jsonl')
  writeFileSync(path, content)
  return path
}

const jsonl = (lines: readonly object[]): string => lines.map((line) => JSON.stringify(line) + '\n').join('')

describe('readJournal', () => {
  it('returns the valid lines in order', () => {
    const lines = [stamp(SAMPLE_INPUTS.run_start, 1), stamp(SAMPLE_INPUTS.log, 2), stamp(SAMPLE_INPUTS.run_end, 3)]
    expect(readJournal(fileWith(jsonl(lines)))).toStrictEqual({ lines, tornTail: null, invalid: [], outOfOrder: [], gaps: [] })
  })

  it('a torn tail is reported, not thrown: partial bytes after the last newline, with their byte offset', () => {
    const complete = jsonl([stamp(SAMPLE_INPUTS.log, 1), stamp({ ...SAMPLE_INPUTS.log, message: 'café ☕' }, 2)])
    const partial = '{"v":1,"seq":3,"ts":"2026-09-22T16:21:00.000Z","type":"log","message":"né'
    const read = readJournal(fileWith(complete + partial))
    expect(read.lines.map((line) => line.seq)).toEqual([1, 2])
    expect(read.invalid).toEqual([])
    expect(read.tornTail).toEqual({ byteOffset: Buffer.byteLength(complete), text: partial, lineNumber: 3 })
  })

  it('a tail torn inside a multi-byte character is still reported, not thrown', () => {
    const complete = jsonl([stamp(SAMPLE_INPUTS.log, 1)])
    const bytes = Buffer.concat([Buffer.from(complete), Buffer.from('{"message":"☕').subarray(0, -1)])
    const read = readJournal(fileWith(bytes))
    expect(read.lines).toHaveLength(1)
    expect(read.tornTail?.byteOffset).toBe(Buffer.byteLength(complete))
  })

  it('reports each invalid complete line with its line number and keeps every valid line around it', () => {
    const content = [
      JSON.stringify(stamp(SAMPLE_INPUTS.log, 1)),
      'not json at all',
      JSON.stringify({ ...stamp(SAMPLE_INPUTS.agent_end, 3), logicalCallId: undefined }),
      JSON.stringify(stamp(SAMPLE_INPUTS.log, 4)),
    ].join('\n') + '\n'
    const read = readJournal(fileWith(content))
    expect(read.lines.map((line) => line.seq)).toEqual([1, 4])
    expect(read.invalid.map((entry) => entry.lineNumber)).toEqual([2, 3])
    expect(read.invalid[0]?.error).toMatch(/line 2 is not JSON/)
    expect(read.invalid[1]?.error).toMatch(/at line 3: .*logicalCallId/)
    expect(read.invalid[1]?.text).toContain('"seq":3')
  })

  it('skips blank lines but counts them in line numbers', () => {
    const content = `${JSON.stringify(stamp(SAMPLE_INPUTS.log, 1))}\n\n{oops}\n`
    const read = readJournal(fileWith(content))
    expect(read.lines).toHaveLength(1)
    expect(read.invalid).toEqual([expect.objectContaining({ lineNumber: 3 })])
  })

  it('reports a seq that does not increase, and still returns the line', () => {
    const read = readJournal(fileWith(jsonl([stamp(SAMPLE_INPUTS.log, 1), stamp(SAMPLE_INPUTS.log, 2), stamp(SAMPLE_INPUTS.log, 2)])))
    expect(read.lines).toHaveLength(3)
    expect(read.outOfOrder).toEqual([{ lineNumber: 3, seq: 2, previousSeq: 2 }])
    expect(journalDamage(read)).toEqual([{ lineNumber: 3, kind: 'seq-repeat', problem: expect.stringMatching(/^line 3: seq 2 repeats the seq of the line before it \(expected 3\)/) }])
  })

  it('reports a seq gap (lines missing) with the line number, and still returns every line', () => {
    const read = readJournal(fileWith(jsonl([stamp(SAMPLE_INPUTS.log, 1), stamp(SAMPLE_INPUTS.log, 2), stamp(SAMPLE_INPUTS.log, 4), stamp(SAMPLE_INPUTS.log, 5)])))
    expect(read.lines).toHaveLength(4)
    expect(read.gaps).toEqual([{ lineNumber: 3, seq: 4, expectedSeq: 3 }])
    expect(journalDamage(read).map((place) => place.problem)).toEqual(['line 3: seq gap, expected 3, found 4: the line before it is missing'])
  })

  it('a missing first line is a gap; a journal may start at seq 0', () => {
    expect(readJournal(fileWith(jsonl([stamp(SAMPLE_INPUTS.log, 2), stamp(SAMPLE_INPUTS.log, 3)]))).gaps).toEqual([{ lineNumber: 1, seq: 2, expectedSeq: 1 }])
    expect(readJournal(fileWith(jsonl([stamp(SAMPLE_INPUTS.log, 0), stamp(SAMPLE_INPUTS.log, 1)]))).gaps).toEqual([])
  })

  it('an unreadable line is reported once, not again as a gap after it; a torn tail is no damage', () => {
    const content = `${JSON.stringify(stamp(SAMPLE_INPUTS.log, 1))}\n{garbage\n${JSON.stringify(stamp(SAMPLE_INPUTS.log, 3))}\n{"torn`
    const read = readJournal(fileWith(content))
    expect(journalDamage(read)).toEqual([{ lineNumber: 2, kind: 'unreadable', problem: expect.stringMatching(/^line 2: line 2 is not JSON/) }])
    expect(journalDamage(readJournal(fileWith(`${JSON.stringify(stamp(SAMPLE_INPUTS.log, 1))}\n{"torn`)))).toEqual([])
  })

  it('any deleted or repeated line but the last is reported as damage at its place; an intact journal, torn or not, has none', () => {
    const journal = fc.array(lineArbitrary, { minLength: 2, maxLength: 25 }).map((lines) => lines.map((line, index) => ({ ...line, seq: index + 1 })))
    fc.assert(
      fc.property(journal, fc.nat(), fc.boolean(), fc.boolean(), (lines, pick, repeat, torn) => {
        const tail = torn ? '{"v":1,"seq":' : ''
        expect(journalDamage(readJournal(fileWith(jsonl(lines) + tail)))).toEqual([])
        // Any line but the last: a lost last line leaves no trace a reader could see.
        const at = pick % (lines.length - 1)
        const damaged = repeat ? [...lines.slice(0, at + 1), ...lines.slice(at)] : [...lines.slice(0, at), ...lines.slice(at + 1)]
        const damage = journalDamage(readJournal(fileWith(jsonl(damaged) + tail)))
        // The line after the repeat, or the line that took the deleted one's place (line numbers are 1-based).
        expect(damage).toEqual([{ lineNumber: at + (repeat ? 2 : 1), kind: repeat ? 'seq-repeat' : 'seq-gap', problem: expect.stringContaining(`line ${at + (repeat ? 2 : 1)}: `) }])
      }),
      { numRuns: 200 },
    )
  })

  it('reads a payload with an own __proto__ key exactly as the zod schema does', () => {
    const text = `{"v":1,"seq":1,"ts":"2026-09-22T16:21:00.000Z","runId":"r","executionId":"r","type":"log","level":"info","message":"m","data":{"__proto__":{"polluted":true},"kept":1}}\n`
    const read = readJournal(fileWith(text))
    expect(read.lines).toStrictEqual([JournalLineSchema.parse(JSON.parse(text))])
    expect(read.lines[0]).toMatchObject({ data: { kept: 1 } })
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('an empty file is an empty journal', () => {
    expect(readJournal(fileWith(''))).toStrictEqual({ lines: [], tornTail: null, invalid: [], outOfOrder: [], gaps: [] })
  })

  it('a file that cannot be read throws JournalReadError naming the path', async () => {
    const missing = join(tmpdir(), 'locus-no-such-dir', 'journal.jsonl')
    expect(() => readJournal(missing)).toThrow(JournalReadError)
    expect(() => readJournal(missing)).toThrow(/locus-no-such-dir/)
    await expect(readJournalAsync(missing)).rejects.toThrow(JournalReadError)
  })

  it('readJournalAsync gives the same result', async () => {
    const path = fileWith(jsonl([stamp(SAMPLE_INPUTS.log, 1)]) + '{"torn')
    expect(await readJournalAsync(path)).toStrictEqual(readJournal(path))
  })

  it('never drops a complete valid line, whatever garbage surrounds it, and never throws', () => {
    const garbage = fc.oneof(fc.string().filter((text) => !text.includes('\n')), fc.constant('{}'), fc.constant('[1,2]'), fc.constant('null'))
    const entry = fc.oneof(
      lineArbitrary.map((line) => ({ valid: true as const, line })),
      garbage.map((text) => ({ valid: false as const, text })),
    )
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 30 }), fc.string().filter((text) => !text.includes('\n')), (entries, tail) => {
        const text = entries.map((item) => (item.valid ? JSON.stringify(item.line) : item.text) + '\n').join('') + tail
        const read = readJournal(fileWith(text))
        const expected = entries.filter((item) => item.valid).map((item) => JSON.parse(JSON.stringify(item.line)) as unknown)
        expect(read.lines).toStrictEqual(expected)
        expect(read.tornTail === null).toBe(tail.length === 0)
      }),
      { numRuns: 150 },
    )
  })
})
