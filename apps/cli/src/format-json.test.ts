import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { JsonValue } from '@locus/outcome'
import { formatJson } from './format-json.js'

describe('formatJson', () => {
  it('keeps what fits on one line and breaks what does not', () => {
    expect(formatJson({ ok: true, items: [{ id: 'T-1' }] }, 80)).toBe('{ "ok": true, "items": [{ "id": "T-1" }] }')
    expect(formatJson({ ok: true, summary: 'x'.repeat(40) }, 30)).toBe(`{\n  "ok": true,\n  "summary": "${'x'.repeat(40)}"\n}`)
  })

  it('property: the text parses back to the same value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer({ min: 10, max: 120 }), (value, width) => {
        expect(JSON.parse(formatJson(value as JsonValue, width))).toEqual(JSON.parse(JSON.stringify(value)))
      }),
    )
  })
})
