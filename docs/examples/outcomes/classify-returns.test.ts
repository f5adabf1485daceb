import { describe, expect, it, vi } from 'vitest'
import { main } from './classify-returns.js'

describe('outcomes example', () => {
  it('prints the verdicts the outcome guide promises', () => {
    vi.spyOn(console, 'log').mockImplementation(() => undefined)
    const verdicts = Object.fromEntries(main().map((verdict) => [verdict.label, verdict]))
    expect(verdicts['a plain answer']?.verdict).toBe('success')
    expect(verdicts['an explicit failure']).toMatchObject({ verdict: 'failure', detail: 'ok-false' })
    expect(verdicts['a partial answer']).toMatchObject({ verdict: 'failure', detail: 'partial' })
    expect(verdicts['a blocked decision']).toMatchObject({ verdict: 'failure', detail: 'status (status blocked)' })
    expect(verdicts['ok as a string']?.verdict).toBe('success')
    expect(verdicts['an unknown status']?.verdict).toBe('success')
    expect(verdicts['a fulfilled null']).toMatchObject({ verdict: 'success', detail: 'null' })
    expect(verdicts['a BigInt deep inside']).toMatchObject({ verdict: 'boundary error', detail: 'bigint at $.invoices[0].total' })
  })
})
