import { describe, expect, it } from 'vitest'
import { newRequestId } from '../src/request-log.js'

describe('newRequestId', () => {
  it('gives distinct req_ ids of 16 hex digits across many refills of its random pool', () => {
    const ids = Array.from({ length: 5_000 }, () => newRequestId())
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{16}$/)
    expect(new Set(ids).size).toBe(ids.length)
  })
})
