import { readFileSync } from 'node:fs'
import { RuntimeInputError, parseScriptedFixtures, scriptedFixturesJsonSchema } from '@locus/runtime'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { describe, expect, it } from 'vitest'

/** One rule per step kind, every optional field used once. */
const EVERY_KIND = {
  $schema: './node_modules/@locus/runtime/fixtures.schema.json',
  rules: [
    { match: { agent: 'writer', label: 'summary', phase: 'draft', prompt: 'release' }, steps: [{ text: 'ok', delayMs: 10, usage: { inputTokens: 3, outputTokens: 1 }, toolCalls: [{ tool: 'lookup', args: { id: 1 } }, { tool: 'ping' }] }] },
    { match: { promptPattern: '^item \\d+$' }, steps: [{ hang: true }, { throw: 'host-turn-timeout', message: 'slow', delayMs: 5 }, { throw: 'sdk-unavailable' }] },
    { steps: [{ stop: 'length', text: 'cut sh' }, { fail: 'provider-error', reason: '503' }, { fail: 'unparseable-answer' }, { empty: true }] },
  ],
}

const BROKEN: readonly { readonly fixtures: unknown; readonly says: string }[] = [
  { fixtures: { rules: [{ steps: [{ txt: 'hi' }] }] }, says: 'f.json.rules.0.steps.0: a step needs one of the keys "text", "hang", "throw", "stop", "fail", "empty"; it has "txt"' },
  { fixtures: { rules: [{ match: { agnet: 'writer' }, steps: [{ text: 'x' }] }] }, says: 'f.json.rules.0.match: Unrecognized key: "agnet"; expected only "agent", "label", "phase", "prompt", "promptPattern"' },
  { fixtures: { rules: [{ steps: [{ text: 'x', delayMs: -1 }] }] }, says: 'f.json.rules.0.steps.0.delayMs: Too small: expected number to be >=0 (in a "text" step)' },
  { fixtures: { rules: [{ steps: [{ text: 'x', extra: 1 }] }] }, says: 'f.json.rules.0.steps.0: Unrecognized key: "extra"; expected only "text", "delayMs", "usage", "toolCalls" (in a "text" step)' },
  { fixtures: { rules: [{ steps: [{ throw: 'sdk-unavailable', fail: 'provider-error' }] }] }, says: 'f.json.rules.0.steps.0: a step is of one kind, but this one has "throw" and "fail"; split it into steps' },
  { fixtures: { rules: [{ steps: [{ hang: 'yes' }] }] }, says: 'f.json.rules.0.steps.0.hang: Invalid input: expected true (in a "hang" step)' },
  { fixtures: { rules: [{ steps: ['hi'] }] }, says: 'f.json.rules.0.steps.0: expected a step object with one of the keys "text", "hang", "throw", "stop", "fail", "empty", such as { "text": "..." }; got "hi"' },
  { fixtures: { rules: [{ steps: [] }] }, says: 'f.json.rules.0.steps: Too small: expected array to have >=1 items' },
  { fixtures: { rule: [] }, says: 'f.json: Unrecognized key: "rule"; expected only "$schema", "rules"' },
  { fixtures: { rules: [{ steps: [{ text: 'x', toolCalls: [{ tol: 'a' }] }] }] }, says: 'f.json.rules.0.steps.0.toolCalls.0: Unrecognized key: "tol"; expected only "tool", "args" (in a "text" step)' },
]

function refusal(fixtures: unknown): RuntimeInputError {
  try {
    parseScriptedFixtures(fixtures, 'f.json')
  } catch (error) {
    if (RuntimeInputError.isInstance(error)) return error
    throw error
  }
  throw new Error(`accepted ${JSON.stringify(fixtures)}`)
}

describe('the scripted host fixtures format (issue 30, item 25)', () => {
  const schema = scriptedFixturesJsonSchema()
  const ajv = new Ajv2020({ strict: false })
  const validate = ajv.compile(schema)

  it('is the JSON Schema the package ships', () => {
    const shipped = JSON.parse(readFileSync(new URL('../fixtures.schema.json', import.meta.url), 'utf8')) as unknown
    expect(shipped, 'run `pnpm --filter @locus/runtime run schema` to regenerate fixtures.schema.json').toEqual(schema)
  })

  it('takes every step kind, in zod and in the JSON Schema alike', () => {
    expect(validate(EVERY_KIND)).toBe(true)
    expect(parseScriptedFixtures(EVERY_KIND).rules.map((rule) => rule.steps.length)).toEqual([1, 3, 4])
  })

  it('refuses a bad field naming its path and what is expected there, as the JSON Schema does', () => {
    for (const { fixtures, says } of BROKEN) {
      const error = refusal(fixtures)
      expect(error.code).toBe('RUN_OPTIONS_INVALID')
      expect(error.message).toContain('docs/scripted-host.md')
      expect(error.message.split('\n').slice(1).map((line) => line.trim())).toContain(says)
      expect({ fixtures, valid: validate(fixtures) }).toEqual({ fixtures, valid: false })
    }
  })

  it('refuses a promptPattern that is not a regular expression, naming it', () => {
    expect(refusal({ rules: [{ match: { promptPattern: '(' }, steps: [{ hang: true }] }] }).message).toContain('f.json.rules.0.match.promptPattern: not a valid regular expression')
  })
})
