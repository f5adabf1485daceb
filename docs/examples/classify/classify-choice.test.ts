import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runExample } from '../run-example.js'
import classifyChoice from './classify-choice.js'

describe('classify choice example', () => {
  it('completes with direct, repaired, case-folded and fallback labels', async () => {
    const run = await runExample(classifyChoice as never, join(import.meta.dirname, 'classify-choice.fixtures.json'))
    expect(run.disposition).toBe('completed')
    expect(run.result).toEqual({
      ok: true,
      labelled: [
        { id: 'M-1', label: 'billing', usedFallback: false },
        { id: 'M-2', label: 'bug', usedFallback: false },
        { id: 'M-3', label: 'feature', usedFallback: false },
        { id: 'M-4', label: 'needs-human', usedFallback: true },
      ],
      needsHuman: ['M-4'],
    })
  })
})
