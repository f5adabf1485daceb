import { type JournalLine, type JournalLineInput, parseJournalLine } from '@locus/journal'
import { describe, expect, it } from 'vitest'
import { styleFor } from '../style.js'
import { createProgressReporter } from './progress-reporter.js'

const plain = styleFor({ write: () => true }, {})

function stamp(inputs: readonly JournalLineInput[]): JournalLine[] {
  return inputs.map((input, seq) => parseJournalLine({ v: 1, seq, ts: `2026-12-03T10:00:0${seq}.000Z`, runId: 'run-7', executionId: 'run-7', ...input }))
}

// A run that stops to wait on a deferred tool: what `locus run` has seen when nothing more happens.
const waiting = stamp([
  { type: 'run_start', workflow: 'refund', input: null, options: {} },
  { type: 'tool_start', toolCallId: 'tool-1', tool: 'approve', attempt: 1, maxAttempts: 1, ordinal: '1' },
  { type: 'deferred_open', deferredId: 'tool-1-a1', toolCallId: 'tool-1', tool: 'approve', attempt: 1, args: { amount: 42 }, expiresAt: null },
])
const command = "locus resolve run-7 tool-1-a1 --result '<json>'"

describe('a run waiting on a deferral says what it waits for', () => {
  it('plain mode prints the tool, the deferral and the exact command that answers it', () => {
    let text = ''
    const reporter = createProgressReporter('plain', { write: (chunk: string) => (text += chunk) }, plain)
    for (const line of waiting) reporter.onEvent(line)
    const last = text.trimEnd().split('\n').at(-1)
    expect(last).toContain('waiting on approve (deferral tool-1-a1, no deadline)')
    expect(last).toContain(command)
  })

  it('a run started with --server names that server in the command, in plain and tree mode', () => {
    const server = 'http://127.0.0.1:4478'
    for (const mode of ['plain', 'tree'] as const) {
      let text = ''
      const reporter = createProgressReporter(mode, { write: (chunk: string) => (text += chunk), isTTY: mode === 'tree', columns: 200 }, plain, { rows: () => 40, server })
      for (const line of waiting) reporter.onEvent(line)
      reporter.finish()
      expect(text).toContain(`${command} --server ${server}`)
    }
  })

  it('names a cap by the flag that sets it, not by its run option, when the run ends on it', () => {
    const message = 'The run reached its agent invocation cap: attempt 4 would exceed maxTotalAgentInvocations = 3. Raise maxTotalAgentInvocations in the run options.'
    const capped = stamp([
      { type: 'run_start', workflow: 'refund', input: null, options: {} },
      { type: 'run_end', disposition: 'failed', ok: false, result: null, durationMs: 5, error: { name: 'InvocationCapError', code: 'invocation_cap', message } },
    ])
    let text = ''
    const reporter = createProgressReporter('plain', { write: (chunk: string) => (text += chunk) }, plain)
    for (const line of capped) reporter.onEvent(line)
    expect(text).toContain('would exceed --max-agents = 3')
    expect(text).not.toContain('maxTotalAgentInvocations')
  })

  it('tree mode prints it above the live tree, where a redraw does not erase it', () => {
    let text = ''
    const reporter = createProgressReporter('tree', { write: (chunk: string) => (text += chunk), isTTY: true, columns: 200 }, plain, { rows: () => 40 })
    for (const line of waiting) reporter.onEvent(line)
    reporter.finish()
    const frames = text.split('\u001b[')
    // Printed once, before the tree that follows it, and never repeated by later redraws.
    expect(text.split(command)).toHaveLength(2)
    expect(frames.at(-1)).not.toContain(command)
  })

  it('says nothing of waiting for a run with no deferral', () => {
    let text = ''
    const reporter = createProgressReporter('plain', { write: (chunk: string) => (text += chunk) }, plain)
    for (const line of waiting.slice(0, 2)) reporter.onEvent(line)
    expect(text).not.toContain('locus resolve')
  })
})
