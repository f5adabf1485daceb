import { describe, expect, it } from 'vitest'
import { budgetsFromFlags, executionOptions } from './commands/run-flags.js'

describe('run flags', () => {
  it('maps --max-agents, --deadline and the per-call flags onto run budgets', () => {
    expect(budgetsFromFlags({ maxAgents: 20, deadline: 600_000, maxToolCalls: 5 })).toEqual({
      maxTotalAgentInvocations: 20,
      deadlineMs: 600_000,
      perCall: { maxToolCalls: 5 },
    })
    expect(budgetsFromFlags({})).toBeUndefined()
  })

  it('lets a flag override what a run recorded, and keeps the rest (locus resume)', () => {
    const recorded = { budgets: { maxTotalAgentInvocations: 10, perCall: { maxAnswerChars: 100 } }, concurrency: 3, launchMode: 'background' as const }
    expect(executionOptions({ maxAgents: 12, durability: 'line' }, recorded)).toEqual({
      budgets: { maxTotalAgentInvocations: 12, perCall: { maxAnswerChars: 100 } },
      concurrency: 3,
      durability: 'line',
      launchMode: 'background',
    })
  })
})
