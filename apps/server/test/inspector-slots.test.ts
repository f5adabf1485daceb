import { type JournalLine, createRunView } from '@locus/journal'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type ExecutionModel, buildTimeline, slotIndexOf } from '../src/inspector/run-model.js'

/** How one slot of a generated group went. */
type SlotRun =
  | 'call-completed' // its tool call completed: the slot completed
  | 'call-failed' // its tool call failed and the slot failed
  | 'call-failed-caught' // its tool call failed but the slot caught it and completed
  | 'failed-before-call' // the slot failed before its call's first line
  | 'returned-without-call' // the slot completed without calling anything

const AMBIGUOUS = new Set<SlotRun>(['call-failed-caught', 'returned-without-call'])

function journal(slots: readonly SlotRun[], notDispatched: number): JournalLine[] {
  let seq = 0
  const base = (): { v: 1; seq: number; ts: string; runId: string; executionId: string } => ({ v: 1, seq: ++seq, ts: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, seq)).toISOString(), runId: 'r', executionId: 'r' })
  const total = slots.length + notDispatched
  const lines: JournalLine[] = [{ ...base(), type: 'group_start', groupId: '1', groupKind: 'parallel', total }]
  slots.forEach((slot, index) => {
    if (slot === 'failed-before-call' || slot === 'returned-without-call') return
    const where = { toolCallId: `tool-1.${index}.1`, tool: 'lookup', attempt: 1, maxAttempts: 1, groupId: '1', ordinal: `1[${index}].1` }
    lines.push({ ...base(), type: 'tool_start', ...where })
    lines.push(
      slot === 'call-completed'
        ? { ...base(), type: 'tool_end', ...where, status: 'completed', durationMs: 1 }
        : { ...base(), type: 'tool_end', ...where, status: 'failed', failure: { error: 'down', retryable: false }, durationMs: 1 },
    )
  })
  const failed = slots.filter((slot) => slot === 'call-failed' || slot === 'failed-before-call').length
  const completed = slots.length - failed
  const outcome = failed === 0 && notDispatched === 0 ? 'completed' : notDispatched > 0 ? 'hard-stopped' : 'failed'
  lines.push({ ...base(), type: 'group_end', groupId: '1', groupKind: 'parallel', total, completed, failed, notDispatched, outcome })
  return lines
}

function slotStates(lines: readonly JournalLine[]): string[] {
  const view = createRunView({ keep: 'all' })
  for (const line of lines) view.apply(line)
  const [group] = buildTimeline({ view } as unknown as ExecutionModel)
  if (group?.kind !== 'group') throw new Error('no group in the timeline')
  return group.slots.map((slot) => slot.state)
}

const slotRun = fc.constantFrom<SlotRun>('call-completed', 'call-failed', 'call-failed-caught', 'failed-before-call', 'returned-without-call')

describe("the inspector's slots", () => {
  it('finds the slot of an ordinal or a nested group id directly under a group', () => {
    expect(slotIndexOf('1[2].1', '1')).toBe(2)
    expect(slotIndexOf('1[0].3[1].1', '1')).toBe(0)
    expect(slotIndexOf('1[0].3[1].1', '1[0].3')).toBe(1)
    expect(slotIndexOf('2[0].1', '1')).toBeUndefined()
    expect(slotIndexOf('1', '1')).toBeUndefined()
  })

  it('agree with group_end: as many completed, failed and not-dispatched slots, the undispatched ones last, every slot in order', () => {
    fc.assert(
      fc.property(fc.array(slotRun, { maxLength: 12 }), fc.integer({ min: 0, max: 5 }), (slots, notDispatched) => {
        const lines = journal(slots, notDispatched)
        const end = lines.at(-1) as Extract<JournalLine, { type: 'group_end' }>
        const states = slotStates(lines)
        expect(states).toHaveLength(slots.length + notDispatched)
        expect(states.filter((state) => state === 'completed')).toHaveLength(end.completed)
        expect(states.filter((state) => state === 'failed')).toHaveLength(end.failed)
        expect(states.slice(slots.length)).toEqual(Array.from({ length: notDispatched }, () => 'not-dispatched'))
      }),
      { numRuns: 300 },
    )
  })

  it('name each slot exactly when the journal leaves no doubt (no caught failure, no slot that returned without a call)', () => {
    fc.assert(
      fc.property(fc.array(slotRun.filter((slot) => !AMBIGUOUS.has(slot)), { maxLength: 12 }), fc.integer({ min: 0, max: 5 }), (slots, notDispatched) => {
        const expected = slots.map((slot) => (slot === 'call-completed' ? 'completed' : 'failed'))
        expect(slotStates(journal(slots, notDispatched))).toEqual([...expected, ...Array.from({ length: notDispatched }, () => 'not-dispatched')])
      }),
      { numRuns: 300 },
    )
  })
})
