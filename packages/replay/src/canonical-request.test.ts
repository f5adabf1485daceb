import { describe, expect, it } from 'vitest'
import { CANONICAL_REQUEST_FIELDS, type AgentCallRequest, canonicalRequest } from './canonical-request.js'
import { CanonicalRequestError } from './replay-errors.js'

describe('canonicalRequest', () => {
  it('keeps only the identity fields: agent, prompt, choice, choiceFallback, timeoutMs, budgets, returnContractVersion', () => {
    const call = {
      agent: 'analyst',
      prompt: 'Summarise',
      choice: ['yes', 'no'],
      choiceFallback: 'no',
      timeoutMs: 60_000,
      budgets: { maxToolCalls: 20 },
      returnContractVersion: 2,
      attempts: 3,
      label: 'history',
      phase: 'gather',
      workspaceHandle: 'w1',
    }
    expect(canonicalRequest(call)).toEqual({
      agent: 'analyst',
      prompt: 'Summarise',
      choice: ['yes', 'no'],
      choiceFallback: 'no',
      timeoutMs: 60_000,
      budgets: { maxToolCalls: 20 },
      returnContractVersion: 2,
    })
    expect(Object.keys(canonicalRequest(call)).sort()).toEqual([...CANONICAL_REQUEST_FIELDS].sort())
  })

  it('attempts never joins the canonical request', () => {
    expect(canonicalRequest({ prompt: 'p', attempts: 3 })).toEqual({ prompt: 'p' })
  })

  it('leaves out undefined fields, including undefined budget members', () => {
    const request = canonicalRequest({
      prompt: 'p',
      agent: undefined,
      timeoutMs: undefined,
      budgets: { maxToolCalls: 5, maxOutputTokens: undefined, nested: { a: undefined, b: 1 } },
    })
    expect(request).toEqual({ prompt: 'p', budgets: { maxToolCalls: 5, nested: { b: 1 } } })
    expect('agent' in request).toBe(false)
    expect('maxOutputTokens' in (request.budgets ?? {})).toBe(false)
  })

  it('keeps null budgets (no limit) apart from absent ones', () => {
    expect(canonicalRequest({ prompt: 'p', budgets: { maxToolCalls: null } })).toEqual({ prompt: 'p', budgets: { maxToolCalls: null } })
  })

  it('shares no arrays or objects with the call', () => {
    const call = { prompt: 'p', choice: ['a'], budgets: { maxToolCalls: 1 } }
    const request = canonicalRequest(call)
    call.choice.push('b')
    call.budgets.maxToolCalls = 2
    expect(request).toEqual({ prompt: 'p', choice: ['a'], budgets: { maxToolCalls: 1 } })
  })

  it.each([
    ['prompt', { prompt: 42 }],
    ['prompt', { agent: 'a' }],
    ['agent', { prompt: 'p', agent: '' }],
    ['agent', { prompt: 'p', agent: 7 }],
    ['timeoutMs', { prompt: 'p', timeoutMs: 0 }],
    ['timeoutMs', { prompt: 'p', timeoutMs: -5 }],
    ['timeoutMs', { prompt: 'p', timeoutMs: Number.NaN }],
    ['timeoutMs', { prompt: 'p', timeoutMs: Number.POSITIVE_INFINITY }],
    ['timeoutMs', { prompt: 'p', timeoutMs: '60s' }],
    ['choice', { prompt: 'p', choice: [] }],
    ['choice', { prompt: 'p', choice: 'yes' }],
    ['choice.1', { prompt: 'p', choice: ['yes', 2] }],
    ['choiceFallback', { prompt: 'p', choiceFallback: 1 }],
    ['budgets', { prompt: 'p', budgets: 5 }],
    ['budgets.maxToolCalls', { prompt: 'p', budgets: { maxToolCalls: Number.NaN } }],
    ['budgets.maxToolCalls', { prompt: 'p', budgets: { maxToolCalls: '20' } }],
    ['budgets.when', { prompt: 'p', budgets: { when: new Date(0) } }],
    ['returnContractVersion', { prompt: 'p', returnContractVersion: -1 }],
    ['returnContractVersion', { prompt: 'p', returnContractVersion: '' }],
    ['returnContractVersion', { prompt: 'p', returnContractVersion: 1.5 }],
  ])('refuses nonsense with a typed error naming the field (%s)', (field, call) => {
    let thrown: unknown
    try {
      canonicalRequest(call as unknown as AgentCallRequest)
    } catch (error) {
      thrown = error
    }
    expect(CanonicalRequestError.isInstance(thrown)).toBe(true)
    const error = thrown as CanonicalRequestError
    expect(error.code).toBe('REPLAY_REQUEST_INVALID')
    expect(error.field).toBe(field)
    expect(error.message).toContain(field)
  })

  it('refuses a call that is not a plain object', () => {
    for (const call of [null, 'prompt', ['p'], new Map()]) {
      expect(() => canonicalRequest(call as unknown as AgentCallRequest)).toThrow(
        expect.objectContaining({ code: 'REPLAY_REQUEST_INVALID', field: 'request' }),
      )
    }
  })

  it('ignores nonsense in fields outside the identity', () => {
    expect(canonicalRequest({ prompt: 'p', attempts: Number.NaN, label: {} as unknown as string })).toEqual({ prompt: 'p' })
  })

  it('is idempotent: a canonical request is its own canonical request', () => {
    const request = canonicalRequest({ agent: 'a', prompt: 'p', budgets: { b: 1, a: 2 }, label: 'x' })
    expect(canonicalRequest(request)).toEqual(request)
  })
})
