import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { JOURNAL_LINE_TYPES, JournalLineSchema } from './journal-line-schema.js'
import { journalLineJsonSchema } from './journal-line-json-schema.js'
import { isValidLineFast } from './line-fast-path.js'
import { parseJournalLine } from './parse-journal-line.js'
import { SAMPLE_INPUTS, lineArbitrary, stamp } from '../test/sample-lines.js'

const jsonRoundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

describe('journal line schemas', () => {
  it('covers every line type the issue names, and log', () => {
    expect([...JOURNAL_LINE_TYPES].sort()).toEqual(Object.keys(SAMPLE_INPUTS).sort())
    for (const type of ['run_start', 'run_end', 'agent_start', 'agent_end', 'error', 'retry', 'group_start', 'group_end', 'tool_start', 'tool_end', 'budget_change', 'replay_diverged', 'log']) {
      expect(JOURNAL_LINE_TYPES).toContain(type)
    }
  })

  it.each(JOURNAL_LINE_TYPES)('round trip: a %s line survives JSON and parses back unchanged', (type) => {
    const line = stamp(SAMPLE_INPUTS[type], 7)
    const parsed = parseJournalLine(jsonRoundTrip(line))
    expect(parsed).toStrictEqual(line)
    expect(JournalLineSchema.parse(jsonRoundTrip(line))).toStrictEqual(line)
  })

  it('round trip holds for generated lines of every type', () => {
    fc.assert(
      fc.property(lineArbitrary, (line) => {
        expect(parseJournalLine(jsonRoundTrip(line))).toStrictEqual(jsonRoundTrip(line))
      }),
      { numRuns: 500 },
    )
  })

  it('every line carries a schema version, seq, timestamp, run id and execution id', () => {
    const line = stamp(SAMPLE_INPUTS.log, 3)
    for (const field of ['v', 'seq', 'ts', 'runId', 'executionId'] as const) {
      const without = Object.fromEntries(Object.entries(line).filter(([key]) => key !== field))
      expect(() => parseJournalLine(without), field).toThrow(new RegExp(`${field}:`))
    }
  })

  it('refuses another schema version, naming it', () => {
    expect(() => parseJournalLine({ ...stamp(SAMPLE_INPUTS.log, 1), v: 2 })).toThrow(/understands journal schema version 1, the line has 2/)
  })

  it('refuses a failed agent_end without failureCause, and a completed one with it', () => {
    const failed: Record<string, unknown> = { ...stamp(SAMPLE_INPUTS.agent_end, 1) }
    delete failed.failureCause
    expect(() => parseJournalLine(failed)).toThrow(/failureCause/)
    expect(() => parseJournalLine({ ...stamp(SAMPLE_INPUTS.agent_end, 1), status: 'completed' })).toThrow(/failureCause/)
  })

  it('refuses a retry message without the [workflow:retry] marker', () => {
    expect(() => parseJournalLine({ ...stamp(SAMPLE_INPUTS.retry, 1), message: 'retrying' })).toThrow(/message/)
  })

  it('refuses run_end whose ok disagrees with its disposition', () => {
    expect(() => parseJournalLine({ ...stamp(SAMPLE_INPUTS.run_end, 1), ok: true })).toThrow(/ok must be true exactly when/)
    expect(() => parseJournalLine({ ...stamp(SAMPLE_INPUTS.run_end, 1), disposition: 'completed' })).toThrow(/ok/)
  })

  it('refuses a group_end that claims completed while slots failed', () => {
    expect(() => parseJournalLine({ ...stamp(SAMPLE_INPUTS.group_end, 1), outcome: 'completed' })).toThrow(/outcome/)
  })

  it('tool lines number attempts with attempt/maxAttempts and are not held to the agent trio', () => {
    expect(parseJournalLine(stamp(SAMPLE_INPUTS.tool_start, 1))).toMatchObject({ attempt: 1, maxAttempts: 3 })
  })

  it('ignores unknown fields, so an older reader can read a newer writer', () => {
    const line = { ...stamp(SAMPLE_INPUTS.log, 1), addedLater: true }
    expect(parseJournalLine(line)).not.toHaveProperty('addedLater')
  })

  it('names the line number and the field in its error', () => {
    expect(() => parseJournalLine({ ...stamp(SAMPLE_INPUTS.tool_end, 1), durationMs: -1 }, 42)).toThrow(/at line 42: durationMs:/)
    expect(() => parseJournalLine({ type: 'nope' }, 3)).toThrow(/type: expected one of run_start/)
    expect(() => parseJournalLine([1], 3)).toThrow(/expected a JSON object, got an array/)
  })
})

describe('the fast path agrees with the zod schema', () => {
  const mutation = fc.oneof(
    fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant('set' as const), pick: fc.nat(), value: fc.oneof(fc.jsonValue({ maxDepth: 1 }), fc.constant(undefined), fc.double()) }),
    fc.record({ kind: fc.constant('add' as const), key: fc.string({ maxLength: 8 }), value: fc.jsonValue({ maxDepth: 1 }) }),
  )

  type Mutation = { kind: 'delete'; pick: number } | { kind: 'set'; pick: number; value: unknown } | { kind: 'add'; key: string; value: unknown }

  function mutate(line: Record<string, unknown>, change: Mutation): Record<string, unknown> {
    const copy = structuredClone(line)
    const keys = Object.keys(copy)
    const key = change.kind === 'add' ? change.key : (keys[change.pick % keys.length] ?? 'x')
    if (change.kind === 'delete') return Object.fromEntries(Object.entries(copy).filter(([name]) => name !== key))
    copy[key] = change.value
    return copy
  }

  it('accepts every valid line as it stands (so valid lines take the fast path)', () => {
    fc.assert(
      fc.property(lineArbitrary, (line) => {
        expect(isValidLineFast(jsonRoundTrip(line), true)).toBe(true)
        expect(isValidLineFast(line, false)).toBe(true)
      }),
      { numRuns: 500 },
    )
  })

  it('whatever it accepts, zod accepts and returns unchanged', () => {
    fc.assert(
      fc.property(lineArbitrary, fc.array(mutation, { maxLength: 3 }), fc.boolean(), (line, changes, trusted) => {
        let candidate: Record<string, unknown> = { ...line }
        for (const change of changes) candidate = mutate(candidate, change)
        const text = JSON.stringify(candidate)
        // The reader trusts JSON.parse output only for text without `__proto__`, which zod would strip.
        const trustedHere = trusted && !text.includes('__proto__')
        if (trustedHere) candidate = JSON.parse(text) as Record<string, unknown>
        if (!isValidLineFast(candidate, trustedHere)) return
        const parsed = JournalLineSchema.safeParse(candidate)
        expect(parsed.success).toBe(true)
        expect(jsonRoundTrip(parsed.data)).toStrictEqual(jsonRoundTrip(candidate))
      }),
      { numRuns: 3000 },
    )
  })

  it('refuses values JSON cannot carry when they come from a caller rather than JSON.parse', () => {
    const line = stamp({ type: 'log', level: 'info', message: 'x', data: { at: new Date(0) } as never }, 1)
    expect(isValidLineFast(line, false)).toBe(false)
    expect(() => parseJournalLine(line)).toThrow(/data/)
  })
})

describe('journalLineJsonSchema', () => {
  it('is a JSON Schema with a definition per line type, discriminated by a const type', () => {
    const schema = journalLineJsonSchema as { $schema: string; $defs: Record<string, { properties?: { type?: { const?: string } } }> }
    expect(schema.$schema).toContain('json-schema.org')
    const types = Object.values(schema.$defs)
      .map((definition) => definition.properties?.type?.const)
      .filter((type) => type !== undefined)
    expect(types.sort()).toEqual([...JOURNAL_LINE_TYPES].sort())
    expect(JSON.parse(JSON.stringify(journalLineJsonSchema))).toStrictEqual(journalLineJsonSchema)
  })

  it('lists the required common fields on every line definition', () => {
    const schema = journalLineJsonSchema as { $defs: Record<string, { required?: string[]; properties?: { type?: unknown } }> }
    for (const [name, definition] of Object.entries(schema.$defs)) {
      if (definition.properties?.type === undefined) continue
      expect(definition.required, name).toEqual(expect.arrayContaining(['v', 'seq', 'ts', 'runId', 'executionId', 'type']))
    }
  })
})
