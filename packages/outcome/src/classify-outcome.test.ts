import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { classifyOutcome, isSemanticFailure } from './classify-outcome.js'
import { prepareWorkflowResult } from './prepare-workflow-result.js'
import { FAILURE_STATUSES } from './vocabulary.js'

describe('classifyOutcome: the three exact failure conditions', () => {
  it('fails a value with ok === false', () => {
    expect(classifyOutcome({ ok: false })).toEqual({ failed: true, reasons: ['ok-false'] })
  })

  it('fails a value with partial === true, even without ok:false', () => {
    expect(classifyOutcome({ partial: true })).toEqual({ failed: true, reasons: ['partial'] })
    expect(classifyOutcome({ ok: true, partial: true })).toEqual({ failed: true, reasons: ['partial'] })
  })

  it.each(FAILURE_STATUSES)('fails a value with status "%s" and keeps the status as detail', (status) => {
    expect(classifyOutcome({ status })).toEqual({ failed: true, reasons: ['status'], status })
  })

  it('fails the blocked example from the contract', () => {
    const result = classifyOutcome({ status: 'blocked', summary: 'Owner decision required' })
    expect(result.failed).toBe(true)
    expect(result).toMatchObject({ reasons: ['status'], status: 'blocked' })
  })

  it('lists every condition that holds, in a fixed order (the checks are additive)', () => {
    expect(classifyOutcome({ status: 'failed', partial: true, ok: false })).toEqual({
      failed: true,
      reasons: ['ok-false', 'partial', 'status'],
      status: 'failed',
    })
    expect(classifyOutcome({ ok: false, status: 'cancelled' })).toEqual({
      failed: true,
      reasons: ['ok-false', 'status'],
      status: 'cancelled',
    })
  })

  it('does not report a status when only ok or partial failed', () => {
    expect(classifyOutcome({ ok: false, status: 'done' })).not.toHaveProperty('status')
  })
})

describe('classifyOutcome: everything else keeps legacy success semantics', () => {
  it.each([
    ['a missing ok/partial/status', { summary: 'done' }],
    ['an empty object', {}],
    ['ok: true', { ok: true }],
    ['ok as the string "false"', { ok: 'false' }],
    ['ok as 0', { ok: 0 }],
    ['ok as null', { ok: null }],
    ['partial as 1', { partial: 1 }],
    ['partial as the string "true"', { partial: 'true' }],
    ['partial: false', { partial: false }],
    ['status "error"', { status: 'error' }],
    ['status "FAILED" (exact strings only)', { status: 'FAILED' }],
    ['status "completed"', { status: 'completed' }],
    ['status as a non-string', { status: ['failed'] }],
  ])('succeeds for %s', (_label, value) => {
    expect(classifyOutcome(value)).toEqual({ failed: false, reasons: [] })
  })

  it.each([
    ['null', null],
    ['a number', 3],
    ['a string', 'failed'],
    ['a boolean false', false],
    ['an array holding a failure record', [{ ok: false }]],
    ['an array with ok:false set on it', Object.assign([], { ok: false })],
  ])('succeeds for %s (non-objects and arrays are not records)', (_label, value) => {
    expect(classifyOutcome(value).failed).toBe(false)
  })

  it('does not look inside nested values: only the direct value is classified', () => {
    expect(classifyOutcome({ ok: true, items: [{ ok: false }], child: { partial: true } }).failed).toBe(false)
  })
})

describe('classifyOutcome properties', () => {
  it('never throws and is always consistent on any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const result = classifyOutcome(value)
        expect(result.failed).toBe(result.reasons.length > 0)
        expect(isSemanticFailure(value)).toBe(result.failed)
      }),
    )
  })

  it('matches the three conditions exactly on records with arbitrary ok/partial/status fields', () => {
    const field = fc.oneof(fc.constant(undefined), fc.jsonValue(), fc.constantFrom('failed', 'blocked', 'cancelled', 'error', true, false))
    fc.assert(
      fc.property(field, field, field, fc.dictionary(fc.string(), fc.jsonValue()), (ok, partial, status, rest) => {
        const value: Record<string, unknown> = { ...rest }
        delete value.ok
        delete value.partial
        delete value.status
        if (ok !== undefined) value.ok = ok
        if (partial !== undefined) value.partial = partial
        if (status !== undefined) value.status = status
        const expected = [
          ...(ok === false ? ['ok-false'] : []),
          ...(partial === true ? ['partial'] : []),
          ...(status === 'failed' || status === 'blocked' || status === 'cancelled' ? ['status'] : []),
        ]
        expect(classifyOutcome(value).reasons).toEqual(expected)
      }),
    )
  })

  it('is context-independent: classifying the detached copy agrees with classifying again after a second detach', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const once = prepareWorkflowResult(value)
        expect(classifyOutcome(prepareWorkflowResult(once))).toEqual(classifyOutcome(once))
      }),
    )
  })
})
