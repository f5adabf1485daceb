// clientValue over random JSON: what a served value loses (stacks; paths and
// CLI advice in messages and location keys) against a plain definition, with
// the input untouched and any part that needs no change handed back as it is.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { clientMessage, clientValue, scrubPaths } from '../src/redact.js'

const KEYS = ['stack', 'message', 'error', 'reason', 'source', 'issues', 'transcriptDir', 'journalPath', 'cwd', 'answer', 'args', 'cause', 'data']
const STRINGS = ['plain words', 'at /home/ana/project/flow.ts:3', 'run locus ls to see it', 'see /v1/runs/abc', 'C:\\work\\x.ts', 'Error: boom\n    at f (/srv/app.js:1:1)', '']

const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, fc.constantFrom(...STRINGS), fc.integer(), fc.boolean(), fc.constant(null), tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(fc.constantFrom(...KEYS), tie('value'), { maxKeys: 5 }),
})).value

/** The definition: a copy of everything, stacks dropped, message keys through clientMessage, location keys through scrubPaths. */
function oracle(value: unknown, key: string | undefined): unknown {
  if (typeof value === 'string') {
    if (key === undefined) return value
    if (['message', 'error', 'reason', 'source'].includes(key)) return clientMessage(value)
    return /(?:Dir|Path|File|^cwd|^path|^dir)$/.test(key) ? scrubPaths(value) : value
  }
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map((item: unknown) => oracle(item, key === 'issues' ? 'message' : undefined))
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>)
      .filter(([name, item]) => !(name === 'stack' && typeof item === 'string'))
      .map(([name, item]) => [name, oracle(item, name)]),
  )
}

/** True when some part of `value` would change. */
function changes(value: unknown): boolean {
  return JSON.stringify(oracle(value, undefined)) !== JSON.stringify(value)
}

describe('clientValue', () => {
  it('serves what the definition says, leaves its input as it was, and copies nothing that needs no change', () => {
    fc.assert(
      fc.property(json, (value) => {
        const before = JSON.stringify(value)
        const served = clientValue(value)
        expect(served).toEqual(oracle(value, undefined))
        expect(JSON.stringify(value)).toBe(before)
        if (!changes(value)) expect(served).toBe(value)
      }),
      { numRuns: 500 },
    )
  })
})
