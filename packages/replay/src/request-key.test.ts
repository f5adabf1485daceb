import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { CANONICAL_REQUEST_FIELDS, type AgentCallRequest, type CanonicalRequest } from './canonical-request.js'
import { canonicalJson } from './canonical-json.js'
import { REQUEST_KEY_PREFIX, canonicalRequestJson, requestKey } from './request-key.js'

const base: CanonicalRequest = {
  agent: 'analyst',
  prompt: 'Summarise the history of T-1',
  choice: ['keep', 'drop'],
  choiceFallback: 'keep',
  timeoutMs: 60_000,
  budgets: { maxToolCalls: 20, maxOutputTokens: 8000 },
  returnContractVersion: 2,
}

function shuffled<TValue>(values: readonly TValue[], order: readonly number[]): TValue[] {
  return values
    .map((value, index) => ({ value, rank: order[index % order.length] ?? 0, index }))
    .sort((left, right) => left.rank - right.rank || left.index - right.index)
    .map((entry) => entry.value)
}

/** Rebuilds an object (and nested plain objects) with its keys inserted in another order. */
function permuted(value: unknown, order: readonly number[]): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value
  const out: Record<string, unknown> = {}
  for (const [key, member] of shuffled(Object.entries(value), order)) out[key] = permuted(member, order)
  return out
}

const budgetValue: fc.Arbitrary<number | null> = fc.oneof(fc.integer({ min: 0, max: 1e9 }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant(null))
const budgetsArbitrary = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 8, unit: 'binary' }),
  fc.oneof(budgetValue, fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), budgetValue, { maxKeys: 4 })),
  { maxKeys: 6 },
)
const requestArbitrary: fc.Arbitrary<CanonicalRequest> = fc.record(
  {
    agent: fc.string({ minLength: 1, maxLength: 12 }),
    prompt: fc.string({ maxLength: 60, unit: 'binary' }),
    choice: fc.array(fc.string({ maxLength: 8 }), { minLength: 1, maxLength: 4 }),
    choiceFallback: fc.string({ maxLength: 8 }),
    timeoutMs: fc.integer({ min: 1, max: 3_600_000 }),
    budgets: budgetsArbitrary,
    returnContractVersion: fc.oneof(fc.nat(20), fc.string({ minLength: 1, maxLength: 4 })),
  },
  { requiredKeys: ['prompt'] },
)

describe('requestKey', () => {
  it('is "sha256:" followed by 64 lowercase hex digits', () => {
    expect(requestKey(base)).toMatch(/^sha256:[0-9a-f]{64}$/)
    expect(requestKey(base).startsWith(REQUEST_KEY_PREFIX)).toBe(true)
  })

  it('hashes the RFC 8785 canonical JSON of the canonical request', async () => {
    const { createHash } = await import('node:crypto')
    const expected = createHash('sha256').update('{"agent":"a","prompt":"p","timeoutMs":5}').digest('hex')
    expect(requestKey({ timeoutMs: 5, prompt: 'p', agent: 'a', label: 'x' })).toBe(`sha256:${expected}`)
  })

  it('adding attempts: 3 keeps the key (attempts never joins the canonical request)', () => {
    expect(requestKey({ ...base, attempts: 3 })).toBe(requestKey(base))
    expect(requestKey({ ...base, attempts: 1 })).toBe(requestKey({ ...base, attempts: 7 }))
  })

  it('changing label or phase keeps the key; so does any unknown field', () => {
    expect(requestKey({ ...base, label: 'history' })).toBe(requestKey(base))
    expect(requestKey({ ...base, phase: 'gather' })).toBe(requestKey({ ...base, phase: 'answer' }))
    expect(requestKey({ ...base, futureOption: true } as AgentCallRequest)).toBe(requestKey(base))
  })

  it.each([
    ['prompt', { prompt: 'Summarise the history of T-2' }],
    ['agent', { agent: 'reviewer' }],
    ['choice', { choice: ['keep', 'drop', 'defer'] }],
    ['choice order', { choice: ['drop', 'keep'] }],
    ['choiceFallback', { choiceFallback: 'drop' }],
    ['timeoutMs', { timeoutMs: 30_000 }],
    ['budgets', { budgets: { maxToolCalls: 21, maxOutputTokens: 8000 } }],
    ['budgets (one more)', { budgets: { maxToolCalls: 20, maxOutputTokens: 8000, maxAnswerChars: 100 } }],
    ['returnContractVersion', { returnContractVersion: 3 }],
  ])('changing %s changes the key', (_field, change) => {
    expect(requestKey({ ...base, ...change })).not.toBe(requestKey(base))
  })

  it('an undefined field is the same as an absent one', () => {
    expect(requestKey({ prompt: 'p', timeoutMs: undefined, budgets: undefined })).toBe(requestKey({ prompt: 'p' }))
  })

  it('property: any permutation of keys, at the top and inside nested budget objects, gives the same key', () => {
    fc.assert(
      fc.property(requestArbitrary, fc.array(fc.nat(1000), { minLength: 1, maxLength: 12 }), fc.nat(5), (request, order, extra) => {
        const reordered = permuted({ ...request, attempts: extra + 1, label: `l${extra}` }, order) as AgentCallRequest
        expect(requestKey(reordered)).toBe(requestKey(request))
      }),
    )
  })

  it('property: any change to one identity field changes the key', () => {
    const changeArbitrary = fc.constantFrom(...CANONICAL_REQUEST_FIELDS).chain((field) =>
      requestArbitrary.map((other) => ({ field, other })),
    )
    fc.assert(
      fc.property(requestArbitrary, changeArbitrary, (request, { field, other }) => {
        const changed: CanonicalRequest = { ...request, [field]: other[field] }
        fc.pre(canonicalJson(changed[field]) !== canonicalJson(request[field]))
        expect(requestKey(changed)).not.toBe(requestKey(request))
      }),
    )
  })
})

describe('canonicalRequestJson', () => {
  it('property: writes exactly what canonicalize writes for any canonical request', () => {
    fc.assert(
      fc.property(requestArbitrary, (request) => {
        expect(canonicalRequestJson(request)).toBe(canonicalJson(request))
      }),
      { numRuns: 500 },
    )
  })
})

describe('canonicalJson', () => {
  it('sorts members by code unit, drops whitespace and writes ECMAScript numbers (RFC 8785)', () => {
    expect(canonicalJson({ b: [1e21, 0.1, -0], a: { d: true, c: null }, '\u20ac': 1, '\r': 2 })).toBe(
      '{"\\r":2,"a":{"c":null,"d":true},"b":[1e+21,0.1,0],"€":1}',
    )
  })
})
