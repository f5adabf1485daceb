import { createManualClock } from '@locus/retry'
import { describe, expect, it } from 'vitest'
import { type SessionRequest } from '@locus/host-contract'
import { ProtocolHostOptionsError, createInProcessTransport, createProtocolHost, createWorker } from '../src/index.js'

const request = (overrides: Partial<SessionRequest> = {}): SessionRequest => ({
  runId: 'r1',
  callId: 'call-1-a1',
  logicalCallId: 'call-1',
  attempt: 1,
  agent: 'default',
  agentConfig: undefined,
  label: undefined,
  phase: undefined,
  budgets: {},
  tools: [],
  ...overrides,
})
const signal = new AbortController().signal

describe('a worker with an llm handler', () => {
  it('answers llm.execute with llm.result from a string, an answer object or the seed actions', async () => {
    const worker = createWorker({
      tools: {},
      llm: ({ messages }) => {
        const last = messages.at(-1)?.content
        if (last === 'string') return 'plain'
        if (last === 'object') return { text: 'rich', stop_reason: 'length', usage: { input_tokens: 1, output_tokens: 2 } }
        return { actions: [{ type: 'llm.result', id: 'x', text: 'as written' }] }
      },
    })
    const ask = (content: string) => worker.handle({ type: 'llm.execute', id: 'x', attempt: 1, deadline: null, messages: [{ role: 'user', content }] })
    expect((await ask('string')).actions).toEqual([{ type: 'llm.result', id: 'x', text: 'plain' }])
    expect((await ask('object')).actions).toEqual([{ type: 'llm.result', id: 'x', text: 'rich', stop_reason: 'length', usage: { input_tokens: 1, output_tokens: 2 } }])
    expect((await ask('actions')).actions).toEqual([{ type: 'llm.result', id: 'x', text: 'as written' }])
  })

  it('turns a thrown failure into llm.error, retryable only when it says so, and refuses LLM work without a handler', async () => {
    const failing = createWorker({ tools: {}, llm: () => { throw Object.assign(new Error('busy'), { retryable: true, code: 'rate_limited' }) } })
    const trigger = { type: 'llm.execute', id: 'y', attempt: 1, deadline: null, messages: [{ role: 'user', content: 'hi' }] }
    expect((await failing.handle(trigger)).actions).toEqual([{ type: 'llm.error', id: 'y', error: 'busy', retryable: true, code: 'rate_limited' }])
    const terminal = createWorker({ tools: {}, llm: () => { throw new Error('no') } })
    expect((await terminal.handle(trigger)).actions).toEqual([{ type: 'llm.error', id: 'y', error: 'no' }])
    expect((await createWorker({ tools: {} }).handle(trigger)).actions).toEqual([{ type: 'llm.error', id: 'y', error: 'this worker serves no LLM calls' }])
  })
})

describe('createProtocolHost', () => {
  it('declares host contract v1 and keeps the conversation across turns of a session', async () => {
    const seen: number[] = []
    const worker = createWorker({ tools: {}, llm: ({ messages }) => { seen.push(messages.length); return `turn ${seen.length}` } })
    const host = createProtocolHost({ transport: createInProcessTransport(worker) })
    expect(host.specificationVersion).toBe('v1')
    const session = await host.openSession(request({ agentConfig: { system: 'be brief' } }))
    expect((await session.prompt('one', { signal })).text).toBe('turn 1')
    expect((await session.prompt('two', { signal })).text).toBe('turn 2')
    expect(seen).toEqual([2, 4])
    expect(session.transcript().map((entry) => `${entry.role}:${entry.content}`)).toEqual(['system:be brief', 'user:one', 'assistant:turn 1', 'user:two', 'assistant:turn 2'])
  })

  it('waits min(base^n, max) seconds between LLM attempts, as the seed says, and reports each attempt', async () => {
    const clock = createManualClock(0)
    const started: number[] = []
    const worker = createWorker({
      tools: {},
      llm: () => {
        started.push(clock.now())
        if (started.length < 3) throw Object.assign(new Error('503'), { retryable: true })
        return 'ok'
      },
    })
    const retry = { timeout_secs: null, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 3 }
    const session = await createProtocolHost({ transport: createInProcessTransport(worker), retry, clock }).openSession(request())
    const turn = session.prompt('go', { signal })
    await clock.runUntilIdle()
    const result = await turn
    expect(started).toEqual([0, 2_000, 5_000])
    expect(result.llmAttempts?.map((attempt) => [attempt.attempt, attempt.outcome, attempt.delayBeforeNextMs])).toEqual([
      [1, 'failed', 2_000],
      [2, 'failed', 3_000],
      [3, 'succeeded', undefined],
    ])
  })

  it('names the option that cannot work', () => {
    const transport = createInProcessTransport(createWorker({ tools: {} }))
    const cases: [unknown, string][] = [
      [undefined, 'options'],
      [{}, 'transport'],
      [{ transport, model: '' }, 'model'],
      [{ transport, retry: { max_retries: 0 } }, 'retry'],
      [{ transport, clock: {} }, 'clock'],
    ]
    for (const [options, field] of cases) {
      let error: unknown
      try {
        createProtocolHost(options as never)
      } catch (caught) {
        error = caught
      }
      expect(ProtocolHostOptionsError.isInstance(error)).toBe(true)
      expect(error).toMatchObject({ field, code: 'PROTOCOL_HOST_OPTIONS_INVALID' })
    }
  })
})
