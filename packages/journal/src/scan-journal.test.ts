import fc from 'fast-check'
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { JournalReadError } from './journal-file-errors.js'
import type { JournalLine } from './journal-line-schema.js'
import { type JournalDamage, type JournalLinePlace, journalDamage, openJournalLineReader, readJournal, readJournalLineAt, readJournalLines, scanJournal } from './read-journal.js'
import { SAMPLE_INPUTS, lineArbitrary, stamp } from '../test/sample-lines.js'

function fileWith(content: string | Buffer): string {
  const path = join(mkdtempSync(join(tmpdir(), 'locus-scan-')), 'journal.jsonl')
  writeFileSync(path, content)
  return path
}

function scanAll(path: string, chunkBytes?: number) {
  const seen: { line: JournalLine; place: JournalLinePlace }[] = []
  const result = scanJournal(path, (line, place) => seen.push({ line, place }), chunkBytes === undefined ? {} : { chunkBytes })
  return { seen, result }
}

describe('scanJournal', () => {
  it('finds what readJournal finds, whatever the chunk size, and each place reads back as its line', () => {
    const garbage = fc.oneof(fc.string().filter((text) => !text.includes('\n')), fc.constant('{}'), fc.constant('  '), fc.constant('{"note":"é ☕ 🙂"}'))
    const entry = fc.oneof(
      { weight: 3, arbitrary: lineArbitrary.map((line) => JSON.stringify(line)) },
      { weight: 1, arbitrary: garbage },
    )
    fc.assert(
      fc.property(
        fc.array(entry, { maxLength: 25 }),
        fc.oneof(fc.constant(''), fc.string().filter((text) => !text.includes('\n')), fc.constant('{"message":"caf\u00e9')),
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 1, max: 400 }),
        fc.boolean(),
        (entries, tail, chunkBytes, windowBytes, backwards) => {
          const path = fileWith(entries.map((text) => text + '\n').join('') + tail)
          const whole = readJournal(path)
          const { seen, result } = scanAll(path, chunkBytes)
          expect(seen.map((item) => item.line)).toStrictEqual(whole.lines)
          expect(result).toStrictEqual({ tornTail: whole.tornTail, invalid: whole.invalid, outOfOrder: whole.outOfOrder, gaps: whole.gaps, lines: whole.lines.length })
          for (const { line, place } of seen) expect(readJournalLineAt(path, place)).toStrictEqual(line)
          // Through one reader with a read-ahead window of any size, in file order or backwards.
          const reader = openJournalLineReader(path, { windowBytes })
          for (const { line, place } of backwards ? [...seen].reverse() : seen) expect(reader.read(place)).toStrictEqual(line)
          reader.close()
        },
      ),
      { numRuns: 200 },
    )
  })

  it('readJournalLines yields the lines readJournal finds, reports the same problems, and stops early when asked', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(lineArbitrary.map((line) => JSON.stringify(line)), fc.constant('not json')), { maxLength: 20 }),
        fc.oneof(fc.constant(''), fc.constant('{"torn')),
        fc.integer({ min: 1, max: 200 }),
        async (entries, tail, chunkBytes) => {
          const path = fileWith(entries.map((text) => text + '\n').join('') + tail)
          const whole = readJournal(path)
          const problems: string[] = []
          const damage: JournalDamage[] = []
          const lines: JournalLine[] = []
          const reading = readJournalLines(path, { chunkBytes, onProblem: (problem) => problems.push(problem), onDamage: (place) => damage.push(place) })
          for await (const line of reading) lines.push(line)
          expect(lines).toStrictEqual(whole.lines)
          expect(damage).toStrictEqual(journalDamage(whole))
          expect(damage).toHaveLength(whole.invalid.length + whole.outOfOrder.length + whole.gaps.length)
          expect(problems).toStrictEqual([...(whole.tornTail === null ? [] : [expect.stringMatching(/^torn last line/)]), ...damage.map((place) => place.problem)])
          if (whole.lines.length > 1) {
            const first: JournalLine[] = []
            for await (const line of readJournalLines(path, { chunkBytes })) {
              first.push(line)
              break
            }
            expect(first).toStrictEqual(whole.lines.slice(0, 1))
          }
        },
      ),
      { numRuns: 100 },
    )
    await expect(readJournalLines(join(tmpdir(), 'locus-no-such-dir', 'journal.jsonl')).next()).rejects.toThrow(JournalReadError)
  })

  it('holds one chunk at a time: a line longer than the chunk is still read whole', () => {
    const long = stamp({ ...SAMPLE_INPUTS.log, message: 'x'.repeat(10_000) }, 1)
    const path = fileWith(`${JSON.stringify(long)}\n${JSON.stringify(stamp(SAMPLE_INPUTS.log, 2))}\n`)
    const { seen } = scanAll(path, 64)
    expect(seen.map((item) => item.line)).toStrictEqual([long, stamp(SAMPLE_INPUTS.log, 2)])
    expect(seen[1]?.place.byteOffset).toBe(Buffer.byteLength(JSON.stringify(long)) + 1)
  })

  it('throws a JournalReadError naming the path when the file cannot be read, and when a place no longer holds a line', () => {
    const missing = join(tmpdir(), 'locus-no-such-dir', 'journal.jsonl')
    expect(() => scanJournal(missing, () => undefined)).toThrow(JournalReadError)
    const path = fileWith(`${JSON.stringify(stamp(SAMPLE_INPUTS.log, 1))}\n`)
    const { seen } = scanAll(path)
    const place = seen[0]?.place as JournalLinePlace
    expect(() => readJournalLineAt(path, { byteOffset: place.byteOffset + 1, byteLength: place.byteLength })).toThrow(/no longer a journal line/)
    expect(() => readJournalLineAt(path, { byteOffset: place.byteLength + 10, byteLength: 5 })).toThrow(JournalReadError)
  })

  it('a reader closed and read again opens the file again and sees what is there now', () => {
    const path = fileWith(`${JSON.stringify(stamp(SAMPLE_INPUTS.log, 1))}\n`)
    const { seen } = scanAll(path)
    const place = seen[0]?.place as JournalLinePlace
    const reader = openJournalLineReader(path)
    expect(reader.read(place).seq).toBe(1)
    writeFileSync(path, `${JSON.stringify(stamp(SAMPLE_INPUTS.log, 7))}\n`)
    reader.close()
    expect(reader.read(place).seq).toBe(7)
    reader.close()
  })

  it('sees a line appended after an earlier scan at the place a new scan gives it', () => {
    const path = fileWith(`${JSON.stringify(stamp(SAMPLE_INPUTS.log, 1))}\n`)
    appendFileSync(path, `${JSON.stringify(stamp(SAMPLE_INPUTS.run_end, 2))}\n`)
    const { seen } = scanAll(path, 7)
    expect(readJournalLineAt(path, seen[1]?.place as JournalLinePlace).type).toBe('run_end')
  })
})
