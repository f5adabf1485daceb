import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { describeGap, describeOutcome, describeStep, gapCaveat } from './describe-outcome.js'
import type { PlanStep } from './plan.js'
import { isEmptyData, isEmptyResult, parseToolResult, toolEmpty, toolFailed, toolFound, toolOk } from './tool-result.js'

const tickets: PlanStep = { n: 4, tool: 'search_tickets', criticality: 'confirming', description: 'open tickets' }

describe('empty against failed', () => {
  it('describes empty data as a fact: "checked X: none found"', () => {
    expect(describeOutcome(tickets, toolEmpty())).toBe('checked open tickets: none found')
  })

  it('describes a failed step as a gap: "could not check X", never "none found"', () => {
    const sentence = describeOutcome(tickets, toolFailed('unavailable', 'ticket system down'))
    expect(sentence).toBe('could not check open tickets')
    expect(sentence).not.toMatch(/none found/)
  })

  it('describes a step that was not reached as a gap too', () => {
    expect(describeOutcome(tickets, undefined)).toBe('could not check open tickets')
  })

  it('describes a step that found something as "checked X"', () => {
    expect(describeOutcome(tickets, toolFound([{ id: 7 }]))).toBe('checked open tickets')
  })

  it('falls back to the tool name when a step has no description', () => {
    expect(describeStep({ n: 1, tool: 'get_invoices', criticality: 'required' })).toBe('get_invoices')
  })

  it('isEmptyResult is true only for ok results that found nothing', () => {
    expect(isEmptyResult(toolEmpty())).toBe(true)
    expect(isEmptyResult(toolFound([]))).toBe(false)
    expect(isEmptyResult(toolFailed('unavailable', 'down'))).toBe(false)
    expect(isEmptyResult(undefined)).toBe(false)
  })

  it('toolOk reads emptiness from the data', () => {
    for (const empty of [[], {}, null, undefined, '', new Map(), new Set()]) expect(toolOk(empty).state).toBe('empty')
    for (const found of [[0], { a: 1 }, 0, false, 'x', new Date(0)]) expect(toolOk(found).state).toBe('found')
  })

  it('a failed result is never empty, whatever its class and error (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom('correctable', 'unavailable', 'forbidden', 'fatal' as const), fc.string(), (failureClass, error) => {
        const result = toolFailed(failureClass, error)
        expect(isEmptyResult(result)).toBe(false)
        expect(describeOutcome(tickets, result)).toBe('could not check open tickets')
      }),
    )
  })

  it('every ok result is described as checked, and as none found exactly when empty (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (data) => {
        const result = toolOk(data)
        const sentence = describeOutcome(tickets, result)
        expect(sentence.startsWith('checked open tickets')).toBe(true)
        expect(sentence.endsWith(': none found')).toBe(isEmptyData(data))
      }),
    )
  })

  it('describes a gap with its reason, and as a caveat sentence', () => {
    const gap = { step: 3, tool: 'get_payment_history', criticality: 'enriching' as const, reason: 'timed out', description: 'the payment history' }
    expect(describeGap(gap)).toBe('could not check the payment history (timed out)')
    expect(gapCaveat(gap)).toBe('Could not check the payment history (timed out).')
  })
})

describe('parseToolResult', () => {
  it('accepts both shapes', () => {
    expect(parseToolResult({ ok: true, state: 'empty', data: [] })).toEqual(toolEmpty())
    expect(parseToolResult({ ok: false, class: 'unavailable', error: 'down' })).toEqual(toolFailed('unavailable', 'down'))
  })

  it('rejects an unknown failure class, naming the field and the classes', () => {
    expect(() => parseToolResult({ ok: false, class: 'flaky', error: 'x' })).toThrow(/Invalid result\.class: .*correctable, unavailable, forbidden, fatal/)
  })

  it('reads the emptiness of a plain { ok: true, data } from the data, as toolOk does', () => {
    expect(parseToolResult({ ok: true, data: [] })).toEqual(toolEmpty())
    expect(parseToolResult({ ok: true, data: [1] })).toEqual(toolFound([1]))
  })

  it('gives a plain { ok: false, error } the default class, fatal', () => {
    expect(parseToolResult({ ok: false, error: 'down' })).toEqual(toolFailed('fatal', 'down'))
  })

  it('rejects a failed result without an error, naming the field', () => {
    expect(() => parseToolResult({ ok: false })).toThrow(/Invalid result\.error/)
  })
})
