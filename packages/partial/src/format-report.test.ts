import { describe, expect, it } from 'vitest'
import { formatGapsReport, formatOutcomeReport } from './format-report.js'

describe('formatOutcomeReport', () => {
  it('prints the seed table, with n/a where there is no answer to grade', () => {
    const table = formatOutcomeReport({
      complete: 2641,
      partial: 294,
      cannotAnswer: 71,
      failed: 9,
      total: 3015,
      correctComplete: 0.95,
      correctPartial: 0.91,
    })
    expect(table.split('\n')).toEqual([
      'Outcome         Runs  Correct',
      'complete       2,641     0.95',
      'partial          294     0.91',
      'cannot_answer     71      n/a',
      'failed             9      n/a',
    ])
  })

  it('prints n/a for correctness nobody graded', () => {
    const table = formatOutcomeReport({ complete: 1, partial: 0, cannotAnswer: 0, failed: 0, total: 1, correctComplete: null, correctPartial: null })
    expect(table).toMatch(/complete\s+1\s+n\/a/)
  })
})

describe('formatGapsReport', () => {
  it('prints each tool with its share of all gaps', () => {
    const table = formatGapsReport({
      tools: [
        { tool: 'get_payment_history', gaps: 118, blocking: 41 },
        { tool: 'search_tickets', gaps: 177, blocking: 0 },
      ],
      totalGaps: 295,
    })
    expect(table.split('\n')[1]).toMatch(/^get_payment_history\s+118\s+41\s+40%$/)
  })
})
