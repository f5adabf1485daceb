import { fileURLToPath } from 'node:url'
import type { JournalLine } from '@locus/journal'
import { type LlmExecuteTrigger, createInProcessTransport, createProtocolHost, createStdioTransport, createWorker } from '@locus/protocol'
import { createManualClock } from '@locus/retry'
import { createMemoryRunStore } from '@locus/store'
import { type AgentCallError, defineWorkflow, runWorkflowScript } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { linesOfType, settle } from './helpers.js'

const NO_WAIT = { timeout_secs: null, max_retries: 3, backoff_base_secs: 0, backoff_max_secs: 0 }

function askOnce(prompt: string) {
  return defineWorkflow({
    name: 'ask',
    agents: { analyst: { system: 'You answer briefly.', model: 'worker-model', retry: NO_WAIT } },
    run: async ({ agent }) => {
      const answer = await agent(prompt, { agent: 'analyst' })
      return { ok: true, answer: answer.answer, usage: answer.usage }
    },
  })
}

/** Runs a workflow on the memory store and returns its result and journal lines. */
async function runCollecting(flow: Parameters<typeof runWorkflowScript>[0], options: Parameters<typeof runWorkflowScript>[1]) {
  const lines: JournalLine[] = []
  const run = await runWorkflowScript(flow, { store: createMemoryRunStore(), ...options, onEvent: (line) => lines.push(line) })
  return { run, lines }
}

describe('createProtocolHost: agent() calls answered by a worker over the protocol', () => {
  it('sends one llm.execute trigger per turn with the conversation, and journals the LLM attempt', async () => {
    const triggers: LlmExecuteTrigger[] = []
    const worker = createWorker({
      tools: {},
      llm: (request, { trigger }) => {
        triggers.push(trigger)
        return { text: `${request.model ?? '?'} heard ${request.messages.length} messages`, stop_reason: 'end', usage: { input_tokens: 12, output_tokens: 4 } }
      },
    })
    const { run, lines } = await runCollecting(askOnce('What is 2 + 2?'), { host: createProtocolHost({ transport: createInProcessTransport(worker) }) })
    expect(run.result).toEqual({ ok: true, answer: 'worker-model heard 2 messages', usage: { inputTokens: 12, outputTokens: 4 } })
    expect(triggers).toHaveLength(1)
    expect(triggers[0]).toMatchObject({
      type: 'llm.execute',
      attempt: 1,
      deadline: null,
      agent: 'analyst',
      model: 'worker-model',
      messages: [
        { role: 'system', content: 'You answer briefly.' },
        { role: 'user', content: 'What is 2 + 2?' },
      ],
    })
    const attempts = linesOfType(lines, 'llm_attempt')
    expect(attempts).toEqual([expect.objectContaining({ llmAttempt: 1, llmMaxAttempts: 3, outcome: 'succeeded', model: 'worker-model', turn: 1, callId: 'call-1-a1' })])
  })

  it('retries a retryable llm.error under the agent config retry: two llm_attempt lines, then the answer', async () => {
    let calls = 0
    const worker = createWorker({
      tools: {},
      llm: () => {
        calls += 1
        if (calls === 1) throw Object.assign(new Error('upstream 503'), { retryable: true, code: 'provider_error' })
        return 'second time lucky'
      },
    })
    const { run, lines } = await runCollecting(askOnce('hello'), { host: createProtocolHost({ transport: createInProcessTransport(worker) }) })
    expect(run.result).toMatchObject({ answer: 'second time lucky' })
    expect(linesOfType(lines, 'llm_attempt').map((line) => [line.llmAttempt, line.outcome, line.code, line.retryable, line.error])).toEqual([
      [1, 'failed', 'provider_error', true, 'upstream 503'],
      [2, 'succeeded', undefined, undefined, undefined],
    ])
    // The LLM retries stay inside one agent attempt: no second child.
    expect(linesOfType(lines, 'agent_start')).toHaveLength(1)
  })

  it('ends the call on a non-retryable llm.error after one attempt, whatever its code or the policy', async () => {
    let calls = 0
    const worker = createWorker({
      tools: {},
      llm: () => {
        calls += 1
        throw Object.assign(new Error('content policy'), { code: 'rate_limited' })
      },
    })
    const flow = askOnce('hello')
    const { run, lines } = await runCollecting(flow, { host: createProtocolHost({ transport: createInProcessTransport(worker) }) })
    expect(run.disposition).toBe('failed')
    expect(calls).toBe(1)
    expect(linesOfType(lines, 'llm_attempt').map((line) => [line.outcome, line.retryable, line.code])).toEqual([['failed', false, 'rate_limited']])
    expect(linesOfType(lines, 'agent_end')).toEqual([expect.objectContaining({ status: 'failed', failureCause: 'provider-error', reason: 'the LLM call failed after 1 attempt: content policy' })])
  })

  it('retries an attempt whose timeout lapsed, stamped deadline_exceeded, with the deadline on the trigger', async () => {
    const clock = createManualClock(Date.UTC(2026, 0, 1))
    const triggers: LlmExecuteTrigger[] = []
    const worker = createWorker({
      tools: {},
      llm: (_request, { trigger }) => {
        triggers.push(trigger)
        return trigger.attempt === 1 ? new Promise<string>(() => undefined) : 'in time'
      },
    })
    const flow = defineWorkflow({
      name: 'slow',
      agents: { analyst: { retry: { timeout_secs: 30, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 } } },
      run: async ({ agent }) => ({ ok: true, answer: (await agent('think hard', { agent: 'analyst' })).answer }),
    })
    const lines: JournalLine[] = []
    const done = runWorkflowScript(flow, {
      store: createMemoryRunStore(),
      host: createProtocolHost({ transport: createInProcessTransport(worker), clock }),
      onEvent: (line) => lines.push(line),
    })
    await settle()
    expect(triggers.map((trigger) => trigger.deadline)).toEqual(['2026-01-01T00:00:30.000Z'])
    await clock.advance(30_000)
    const run = await done
    expect(run.result).toEqual({ ok: true, answer: 'in time' })
    expect(triggers.map((trigger) => [trigger.attempt, trigger.deadline])).toEqual([
      [1, '2026-01-01T00:00:30.000Z'],
      [2, '2026-01-01T00:01:00.000Z'],
    ])
    expect(linesOfType(lines, 'llm_attempt').map((line) => [line.outcome, line.code, line.retryable])).toEqual([
      ['timed-out', 'deadline_exceeded', true],
      ['succeeded', undefined, undefined],
    ])
  })

  it('reaches a model in a node child process over the stdio transport', async () => {
    const transport = createStdioTransport({
      command: process.execPath,
      args: ['--conditions=@locus/source', '--import', 'tsx', fileURLToPath(new URL('./fixtures/llm-worker.ts', import.meta.url))],
      cwd: fileURLToPath(new URL('..', import.meta.url)),
    })
    try {
      const host = createProtocolHost({ transport, model: 'remote-model' })
      const flow = defineWorkflow({
        name: 'remote',
        agents: { analyst: { retry: NO_WAIT } },
        run: async ({ agent }) => {
          const steady = await agent('a steady question', { agent: 'analyst' })
          const flaky = await agent('a flaky question', { agent: 'analyst' })
          let refused: unknown
          try {
            await agent('please refuse', { agent: 'analyst' })
          } catch (error) {
            refused = error
          }
          return { ok: true, steady: steady.answer, flaky: flaky.answer, refused: (refused as AgentCallError | undefined)?.failureCause }
        },
      })
      const { run, lines } = await runCollecting(flow, { host })
      const result = run.result as { steady: string; flaky: string; refused: string }
      expect(result.steady).toMatch(/^pid \d+ \(remote-model\) says: a steady question$/)
      expect(Number(/pid (\d+)/.exec(result.steady)?.[1])).not.toBe(process.pid)
      expect(result.flaky).toMatch(/says: a flaky question$/)
      expect(result.refused).toBe('provider-error')
      expect(linesOfType(lines, 'llm_attempt').map((line) => [line.logicalCallId, line.llmAttempt, line.outcome, line.code])).toEqual([
        ['call-1', 1, 'succeeded', undefined],
        ['call-2', 1, 'failed', 'rate_limited'],
        ['call-2', 2, 'succeeded', undefined],
        ['call-3', 1, 'failed', 'refused'],
      ])
    } finally {
      await transport.close()
    }
  })
})
