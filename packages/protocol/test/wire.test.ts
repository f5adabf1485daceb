import { Ajv2020 } from 'ajv/dist/2020.js'
import fc from 'fast-check'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import {
  ACTION_TYPES,
  ProtocolError,
  TRIGGER_TYPES,
  parseAction,
  parseCall,
  parseTrigger,
  parseWorkerResponse,
  protocolJsonSchema,
} from '../src/index.js'

const POLICY = { timeout_secs: 30, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 60 }
const DEADLINE = '2026-12-03T06:00:30.000Z'

/** One valid example of every message type. */
const VALID_ACTIONS = {
  'tool.call': { type: 'tool.call', name: 'render_report', arguments: { topic: 'q3' }, retry: POLICY },
  'llm.call': { type: 'llm.call', id: 'c-2', agent: 'writer', messages: [{ role: 'user', content: 'hi' }] },
  'sub_agent.spawn': { type: 'sub_agent.spawn', workflow: 'research', input: { topic: 'q3' }, label: 'child' },
  'tool.result': { type: 'tool.result', id: 't-1', result: { pages: 3 } },
  'tool.error': { type: 'tool.error', id: 't-1', error: 'upstream 503', retryable: true, code: 'provider_error' },
  'llm.result': { type: 'llm.result', id: 'l-1', text: 'done', stop_reason: 'end', usage: { input_tokens: 3, output_tokens: 1 } },
  'llm.error': { type: 'llm.error', id: 'l-1', error: 'rate limited', retryable: true, code: 'rate_limited' },
} as const
const VALID_TRIGGERS = {
  'tool.execute': { type: 'tool.execute', id: 't-1', attempt: 1, deadline: DEADLINE, name: 'render_report', arguments: { topic: 'q3' } },
  'llm.execute': { type: 'llm.execute', id: 'l-1', attempt: 2, deadline: null, messages: [{ role: 'user', content: 'hi' }] },
} as const

function refusal(parse: () => unknown): ProtocolError {
  try {
    parse()
  } catch (error) {
    if (ProtocolError.isInstance(error)) return error
    throw error
  }
  throw new Error('expected a ProtocolError, but the message was accepted')
}

describe('the seed 001 wire', () => {
  it('accepts the seed example tool.call and the worker answer exactly as written', () => {
    const call = parseAction({
      type: 'tool.call',
      name: 'render_report',
      arguments: { topic: 'q3' },
      retry: { timeout_secs: 30, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 60 },
    })
    expect(call).toMatchObject({ type: 'tool.call', retry: { max_retries: 3 } })
    const trigger = { id: 't-1' }
    const answer = parseWorkerResponse({
      actions: [{ type: 'tool.error', id: trigger.id, error: 'upstream 503', retryable: true, code: 'provider_error' }],
    })
    expect(answer.actions[0]).toEqual({ type: 'tool.error', id: 't-1', error: 'upstream 503', retryable: true, code: 'provider_error' })
  })

  it('has one example of every action and trigger type, and accepts each', () => {
    expect(Object.keys(VALID_ACTIONS).sort()).toEqual([...ACTION_TYPES].sort())
    expect(Object.keys(VALID_TRIGGERS).sort()).toEqual([...TRIGGER_TYPES].sort())
    for (const action of Object.values(VALID_ACTIONS)) expect(parseAction(action)).toEqual(action)
    for (const trigger of Object.values(VALID_TRIGGERS)) expect(parseTrigger(trigger)).toEqual(trigger)
  })

  it('refuses an unknown type, naming the types there are', () => {
    const error = refusal(() => parseAction({ type: 'tool.cal', name: 'x', arguments: {} }))
    expect(error.issues).toEqual([{ path: 'type', message: expect.stringContaining('"tool.cal" is not one of tool.call') }])
    expect(error.code).toBe('PROTOCOL_MESSAGE_INVALID')
  })

  it('refuses an unknown field on any message, naming it', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.values(VALID_ACTIONS), ...Object.values(VALID_TRIGGERS)),
        fc.string({ minLength: 1, maxLength: 12 }).filter((key) => !['type', 'id', 'name', 'arguments', 'retry', 'agent', 'model', 'messages', 'workflow', 'input', 'label', 'result', 'error', 'retryable', 'code', 'text', 'stop_reason', 'usage', 'attempt', 'deadline', '__proto__', 'constructor'].includes(key)),
        (message, extra) => {
          const parse = message.type.endsWith('.execute') ? parseTrigger : parseAction
          const error = refusal(() => parse({ ...message, [extra]: 1 }))
          expect(error.issues).toContainEqual({ path: extra, message: `is not a field of ${message.type}; remove it` })
        },
      ),
    )
  })

  it('names every missing or mistyped field of a malformed action', () => {
    const error = refusal(() => parseAction({ type: 'tool.error', id: '', retryable: 'yes', code: 'teapot' }))
    expect(error.issues.map((issue) => issue.path).sort()).toEqual(['code', 'error', 'id', 'retryable'])
    expect(error.message).toMatch(/^Invalid action: /)
  })

  it('refuses a retry policy that breaks the seed rules, naming the field', () => {
    const error = refusal(() => parseAction({ ...VALID_ACTIONS['tool.call'], retry: { ...POLICY, max_retries: 0 } }))
    expect(error.issues[0]?.path).toBe('retry.max_retries')
    const typo = refusal(() => parseAction({ ...VALID_ACTIONS['tool.call'], retry: { ...POLICY, max_retry: 3 } }))
    expect(typo.issues.map((issue) => issue.path)).toContain('retry.max_retry')
  })

  it('carries a deadline as an absolute time or null, never a duration', () => {
    expect(parseTrigger({ ...VALID_TRIGGERS['tool.execute'], deadline: null }).deadline).toBeNull()
    expect(parseTrigger({ ...VALID_TRIGGERS['tool.execute'], deadline: '2026-12-03T07:00:00+01:00' }).deadline).toBe('2026-12-03T07:00:00+01:00')
    for (const deadline of [30, '30s', '2026-12-03T06:00:30', undefined]) {
      const error = refusal(() => parseTrigger({ ...VALID_TRIGGERS['tool.execute'], deadline }))
      expect(error.issues[0]?.path).toBe('deadline')
    }
    expect(refusal(() => parseTrigger({ ...VALID_TRIGGERS['tool.execute'], attempt: 0 })).issues[0]?.path).toBe('attempt')
  })

  it('refuses values that would not survive JSON', () => {
    for (const bad of [{ f: () => 1 }, { n: Number.NaN }, [undefined]]) {
      const error = refusal(() => parseAction({ type: 'tool.result', id: 't', result: bad }))
      expect(error.issues[0]?.path.startsWith('result')).toBe(true)
    }
  })

  it('round-trips any JSON arguments through the wire unchanged', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const json = JSON.parse(JSON.stringify(value)) as unknown
        const action = parseAction({ type: 'tool.call', name: 'echo', arguments: json })
        expect(JSON.parse(JSON.stringify(action))).toEqual({ type: 'tool.call', name: 'echo', arguments: json })
      }),
    )
  })

  it('reports a call with its status', () => {
    const call = parseCall({ id: 'c-1', kind: 'tool', name: 'approve', status: 'waiting', attempt: 1, retry: { ...POLICY, timeout_secs: null }, deadline: null })
    expect(call.status).toBe('waiting')
    expect(refusal(() => parseCall({ ...call, status: 'done' })).issues[0]?.path).toBe('status')
  })
})

describe('the JSON Schema export', () => {
  const schema = protocolJsonSchema()
  const ajv = new Ajv2020({ strict: false })
  ajv.addSchema(schema)
  const validate = (definition: string, value: unknown): boolean => ajv.validate(`https://locus.dev/schemas/protocol.schema.json#/$defs/${definition}`, value)

  it('is the file the package ships', () => {
    const shipped = JSON.parse(readFileSync(new URL('../protocol.schema.json', import.meta.url), 'utf8')) as unknown
    expect(shipped, 'run `pnpm --filter @locus/protocol run schema` to regenerate protocol.schema.json').toEqual(schema)
  })

  it('agrees with the zod schemas on valid and broken messages (a worker in another language sees the same rules)', () => {
    for (const action of Object.values(VALID_ACTIONS)) expect(validate('Action', action)).toBe(true)
    for (const trigger of Object.values(VALID_TRIGGERS)) expect(validate('Trigger', trigger)).toBe(true)
    expect(validate('WorkerResponse', { actions: Object.values(VALID_ACTIONS) })).toBe(true)
    expect(validate('Action', { ...VALID_ACTIONS['tool.error'], extra: 1 })).toBe(false)
    expect(validate('Action', { ...VALID_ACTIONS['tool.error'], retryable: 'yes' })).toBe(false)
    expect(validate('Trigger', { ...VALID_TRIGGERS['tool.execute'], deadline: 30 })).toBe(false)
    expect(validate('RetryPolicy', { ...POLICY, max_retry: 3 })).toBe(false)
  })
})
