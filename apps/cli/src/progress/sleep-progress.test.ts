import { type JournalLine, type JournalLineInput, parseJournalLine } from '@locus/journal'
import { describe, expect, it } from 'vitest'
import { styleFor } from '../style.js'
import { createProgressReporter } from './progress-reporter.js'

const plain = styleFor({ write: () => true }, {})

function stamp(inputs: readonly JournalLineInput[]): JournalLine[] {
  return inputs.map((input, seq) => parseJournalLine({ v: 1, seq, ts: `2026-12-03T10:00:0${seq}.000Z`, runId: 'run-7', executionId: 'run-7', ...input }))
}

// A run that sleeps: what `locus run` has seen while it waits on its timer.
const sleeping = stamp([
  { type: 'run_start', workflow: 'follow-up', input: null, options: {} },
  { type: 'timer_start', timerId: 'timer-1', logicalCallId: 'sleep-1', ordinal: '1', dueAt: '2026-12-10T10:00:00.000Z' },
])

describe('a sleeping run says what it waits for and until when', () => {
  it('in plain mode and above the live tree', () => {
    for (const mode of ['plain', 'tree'] as const) {
      let text = ''
      const reporter = createProgressReporter(mode, { write: (chunk: string) => (text += chunk), isTTY: mode === 'tree', columns: 200 }, plain, { rows: () => 40 })
      for (const line of sleeping) reporter.onEvent(line)
      reporter.finish()
      expect(text).toContain('waiting on timer timer-1 (sleep) until 2026-12-10T10:00:00.000Z')
    }
  })

  it('says when the timer fired, and how late', () => {
    let text = ''
    const reporter = createProgressReporter('plain', { write: (chunk: string) => (text += chunk) }, plain)
    for (const line of [...sleeping, ...stamp([{ type: 'timer_fired', timerId: 'timer-1', firedAt: '2026-12-10T10:00:03.000Z', lateMs: 3_000 }])]) reporter.onEvent(line)
    expect(text).toMatch(/timer timer-1 fired 3(\.0)?\s?s late/)
  })
})
