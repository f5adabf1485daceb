import { join } from 'node:path'
import { createSqliteOutcomeStore } from '@locus/partial/sqlite'
import { answerOutcomeOf, gapsOf, runWorkflowScript } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { tempRunsDir } from './helpers.js'

describe('run outcome metrics', () => {
  it.each([
    ['completed', { ok: true }, 'complete'],
    ['failed', { ok: false, partial: true }, 'partial'],
    ['failed', { ok: false, found: false }, 'cannot_answer'],
    ['failed', null, 'failed'],
    ['cancelled', { ok: true }, 'failed'],
    ['failed', { ok: true, partial: true, found: true, gaps: [], text: 'x' }, 'partial'],
    ['failed', { ok: false, partial: false, found: false, gaps: [], text: 'x' }, 'cannot_answer'],
    ['completed', { ok: true, answer: { ok: true, partial: false, found: true, gaps: [], text: 'x' } }, 'complete'],
  ] as const)('derives the answer outcome of a %s run with result %j', (disposition, result, outcome) => {
    expect(answerOutcomeOf(disposition, result as never)).toBe(outcome)
  })

  it('reads gaps per tool from an Answer in the result, ignoring malformed entries', () => {
    const result = { partial: true, found: true, gaps: [{ tool: 'get_payment_history', criticality: 'enriching', reason: 'timeout' }, { tool: 3 }, { tool: 'x', criticality: 'nope' }] }
    expect(gapsOf(result)).toEqual([{ tool: 'get_payment_history', criticality: 'enriching', reason: 'timeout' }])
  })

  it('records a partial run and its gaps in the outcome store when the run ends', async () => {
    const runsDir = tempRunsDir()
    const store = createSqliteOutcomeStore({ path: join(runsDir, 'outcomes.sqlite') })
    await store.migrate()
    const run = await runWorkflowScript(
      async () => ({ text: 'Net 45.', ok: true, partial: true, found: true, caveats: ['could not check payments'], gaps: [{ tool: 'get_payment_history', criticality: 'enriching', reason: 'down' }], gathered: [] }),
      { runsDir, metrics: store },
    )
    expect(run.disposition).toBe('failed')
    const outcomes = await store.outcomeReport()
    expect(outcomes).toMatchObject({ partial: 1, complete: 0 })
    const gaps = await store.gapsReport()
    expect(gaps.tools[0]).toMatchObject({ tool: 'get_payment_history', gaps: 1, blocking: 0 })
    await store.close()
  })
})
