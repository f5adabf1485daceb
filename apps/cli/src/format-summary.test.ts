import { describe, expect, it } from 'vitest'
import { RESULT_BYTE_LIMIT, cutForTerminal, formatResult } from './format-summary.js'

const where = { resultFile: '/work/runs/big/result.json', cwd: '/work' }

describe('formatResult cuts long results by lines and by bytes', () => {
  it('a 50 MB value on a single line prints a few kilobytes and says where the whole is', () => {
    const blob = 'x'.repeat(50 * 1024 * 1024)
    const text = formatResult(blob, 'completed', where)
    expect(Buffer.byteLength(text)).toBeLessThan(RESULT_BYTE_LIMIT + 200)
    const lines = text.split('\n')
    expect(lines).toHaveLength(2)
    expect(lines[1]).toMatch(/^… \d+ more bytes; full result in runs\/big\/result\.json$/)
    // What is shown plus what is left out is the whole rendering.
    const more = Number(/… (\d+) more bytes/.exec(text)?.[1])
    expect(Buffer.byteLength(lines[0] ?? '') + more).toBe(blob.length + 2)
  })

  it('a large value inside an object is cut within its line, and the lines after it are counted', () => {
    const text = formatResult({ ok: true, blob: 'y'.repeat(1024 * 1024) }, 'completed', where)
    expect(Buffer.byteLength(text)).toBeLessThan(RESULT_BYTE_LIMIT + 200)
    expect(text.split('\n').at(-1)).toMatch(/^… \d+ more bytes \(1 more line\); full result in runs\/big\/result\.json$/)
  })

  it('many short lines are still cut at 40, with the count of lines left out', () => {
    const text = formatResult(Array.from({ length: 100 }, (_, index) => ({ index, padding: 'p'.repeat(90) })), 'completed', where)
    const lines = text.split('\n')
    expect(lines).toHaveLength(41)
    expect(lines.at(-1)).toMatch(/^… \d+ more bytes \(\d+ more lines\); full result in runs\/big\/result\.json$/)
  })

  it('a short result is printed whole, and an unfinished run has none yet', () => {
    expect(formatResult({ ok: true }, 'completed', where)).toBe('{ "ok": true }')
    expect(formatResult(null, 'unfinished', where)).toMatch(/none yet/)
  })

  it('never splits a multi-byte character', () => {
    const cut = cutForTerminal('é'.repeat(10), { maxLines: 40, maxBytes: 5, where: 'result.json' })
    expect(cut.split('\n')[0]).toBe('éé')
    expect(cut).toMatch(/… 16 more bytes; full result in result\.json$/)
  })
})
