import { type JournalLine, createRunView } from '@locus/journal'
import { executionStanding, executionStandings } from '@locus/runtime'
import { describe, expect, it } from 'vitest'

function execution(executionId: string, lines: readonly Record<string, unknown>[]) {
  const view = createRunView()
  lines.forEach((fields, seq) => {
    view.apply({ v: 1, seq, ts: new Date(Date.UTC(2026, 0, 1) + seq).toISOString(), runId: 'r', executionId, ...fields } as JournalLine)
  })
  return { view }
}

const start = { type: 'run_start', workflow: 'w', input: null, options: {} }
const end = { type: 'run_end', disposition: 'completed', ok: true, result: null, durationMs: 1 }

describe('how an execution that ended without run_end stands (one rule for show and the server)', () => {
  it('reads suspended, taken-over or unfinished, and its disposition once it has run_end', () => {
    const suspended = execution('r', [start, { type: 'log', level: 'info', message: 'execution suspended: parked', data: { suspended: true, reason: 'parked' } }])
    const lost = execution('r', [start, { type: 'lease_lost', owner: 'w-1', epoch: 1, reason: 'expired' }])
    const killed = execution('r', [start])
    const takeover = execution('resume-001', [{ ...start, resumeOf: 'r' }, { type: 'worker_takeover', owner: 'w-2', epoch: 2, previousOwner: 'w-1', previousEpoch: 1 }, end])
    const plainResume = execution('resume-001', [{ ...start, resumeOf: 'r' }, end])
    expect(executionStanding(suspended, plainResume)).toBe('suspended')
    expect(executionStanding(lost)).toBe('taken-over')
    expect(executionStanding(killed, takeover)).toBe('taken-over')
    expect(executionStanding(killed, plainResume)).toBe('unfinished')
    expect(executionStanding(killed)).toBe('unfinished')
    expect(executionStandings([killed, takeover])).toEqual(['taken-over', 'completed'])
    // A log line that is not the suspension's says nothing of how the execution ended.
    expect(executionStanding(execution('r', [start, { type: 'log', level: 'info', message: 'hello', data: { suspended: false } }]))).toBe('unfinished')
    // A journal that lost its run_end still ended, as its result.json says.
    expect(executionStanding({ ...killed, resultFile: { disposition: 'failed' } })).toBe('failed')
  })
})
