import { describe, expect, it } from 'vitest'
import { formatJsonPath } from './json-path.js'

describe('formatJsonPath', () => {
  it('writes the root as $', () => {
    expect(formatJsonPath([])).toBe('$')
  })

  it('writes identifiers with dots and indexes with brackets', () => {
    expect(formatJsonPath(['items', 3, 'size'])).toBe('$.items[3].size')
  })

  it('quotes keys that are not identifiers, so the path stays unambiguous', () => {
    expect(formatJsonPath(['content-type', '', '3', 'a"b'])).toBe('$["content-type"][""]["3"]["a\\"b"]')
  })
})
