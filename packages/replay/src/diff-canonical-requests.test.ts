import { describe, expect, it } from 'vitest'
import { diffCanonicalRequests } from './diff-canonical-requests.js'

describe('diffCanonicalRequests', () => {
  it('lists the identity fields that differ, in CANONICAL_REQUEST_FIELDS order', () => {
    expect(
      diffCanonicalRequests(
        { agent: 'a', prompt: 'p', timeoutMs: 5, returnContractVersion: 1 },
        { agent: 'a', prompt: 'q', returnContractVersion: 2 },
      ),
    ).toEqual(['prompt', 'timeoutMs', 'returnContractVersion'])
  })

  it('compares budgets and choice by value, not by property order or identity', () => {
    expect(
      diffCanonicalRequests(
        { prompt: 'p', choice: ['a', 'b'], budgets: { x: 1, y: { z: 2, w: 3 } } },
        { prompt: 'p', choice: ['a', 'b'], budgets: { y: { w: 3, z: 2 }, x: 1 } },
      ),
    ).toEqual([])
    expect(diffCanonicalRequests({ prompt: 'p', budgets: { x: 1 } }, { prompt: 'p', budgets: { x: 2 } })).toEqual(['budgets'])
    expect(diffCanonicalRequests({ prompt: 'p', choice: ['a', 'b'] }, { prompt: 'p', choice: ['b', 'a'] })).toEqual(['choice'])
  })

  it('compares only the fields it is given', () => {
    expect(diffCanonicalRequests({ prompt: 'p', timeoutMs: 1 }, { prompt: 'q', timeoutMs: 2 }, ['timeoutMs'])).toEqual(['timeoutMs'])
  })
})
