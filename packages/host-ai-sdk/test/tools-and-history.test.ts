import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { HostTool } from '@locus/runtime'
import { defineTool, defineWorkflow, runWorkflowScript } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { LLM_ATTEMPTS_FILE, createAiSdkHost } from '../src/index.js'
import { readJsonLines, sessionRequest, startServer, tempDir, turnSignal } from './helpers.js'

function weatherTool(calls: unknown[]): HostTool {
  return {
    name: 'weather',
    description: 'Current weather of a city',
    input: z.object({ city: z.string() }),
    invoke: async (args) => {
      calls.push(args)
      return { city: (args as { city: string }).city, celsius: 21 }
    },
  }
}

describe('tool calls', () => {
  it('round trip: the model asks for a tool, the tool runs through HostTool.invoke, the model answers with the result in its history', async () => {
    const server = await startServer({
      replies: [
        { kind: 'tool-calls', calls: [{ name: 'weather', args: { city: 'Oslo' }, id: 'call_w1' }], usage: { promptTokens: 30, completionTokens: 8 } },
        { kind: 'text', text: 'It is 21 degrees in Oslo.', usage: { promptTokens: 50, completionTokens: 9 } },
      ],
    })
    const invoked: unknown[] = []
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'test-model' })
    const session = await host.openSession(sessionRequest({ tools: [weatherTool(invoked)] }))
    const result = await session.prompt('Weather in Oslo?', turnSignal())

    expect(result).toMatchObject({ text: 'It is 21 degrees in Oslo.', stopReason: 'end' })
    expect(invoked).toEqual([{ city: 'Oslo' }])
    expect(server.requests).toHaveLength(2)
    const first = server.requests[0]!.body
    expect(first.model).toBe('test-model')
    expect(first.tools?.[0]).toMatchObject({ type: 'function', function: { name: 'weather', description: 'Current weather of a city' } })
    expect(JSON.stringify(first.tools?.[0]?.function.parameters)).toContain('"city"')
    const second = server.requests[1]!.body.messages!
    expect(second.map((message) => message.role)).toEqual(['user', 'assistant', 'tool'])
    expect(second[2]).toMatchObject({ role: 'tool', tool_call_id: 'call_w1' })
    expect(String(second[2]!.content)).toContain('21')
    expect(session.transcript().map((entry) => entry.role)).toEqual(['user', 'assistant', 'tool', 'assistant'])
  })

  it('usage is summed over the LLM calls of a turn (sentence: usage recorded per call, sum over steps)', async () => {
    const server = await startServer({
      replies: [
        { kind: 'tool-calls', calls: [{ name: 'weather', args: { city: 'Oslo' } }], usage: { promptTokens: 30, completionTokens: 8 } },
        { kind: 'text', text: 'done', usage: { promptTokens: 50, completionTokens: 9 } },
      ],
    })
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'test-model' })
    const session = await host.openSession(sessionRequest({ tools: [weatherTool([])] }))
    const result = await session.prompt('go', turnSignal())
    expect(result.usage).toEqual({ inputTokens: 80, outputTokens: 17 })
  })

  it('input that fails the zod schema is answered with a tool error and the tool never runs', async () => {
    const server = await startServer({
      replies: [{ kind: 'tool-calls', calls: [{ name: 'weather', args: { town: 7 }, id: 'bad' }] }, { kind: 'text', text: 'sorry' }],
    })
    const invoked: unknown[] = []
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'test-model' })
    const session = await host.openSession(sessionRequest({ tools: [weatherTool(invoked)] }))
    const result = await session.prompt('go', turnSignal())
    expect(result).toMatchObject({ text: 'sorry', stopReason: 'end' })
    expect(invoked).toEqual([])
    const toolMessage = server.requests[1]!.body.messages!.find((message) => message.role === 'tool')
    expect(toolMessage).toMatchObject({ tool_call_id: 'bad' })
  })

  it('a tool that fails is reported to the model as a tool error, and the turn goes on', async () => {
    const server = await startServer({ replies: [{ kind: 'tool-calls', calls: [{ name: 'weather', args: { city: 'X' } }] }, { kind: 'text', text: 'no data' }] })
    const failing: HostTool = { name: 'weather', input: z.object({ city: z.string() }), invoke: async () => { throw new Error('station offline') } }
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'test-model' })
    const session = await host.openSession(sessionRequest({ tools: [failing] }))
    expect(await session.prompt('go', turnSignal())).toMatchObject({ text: 'no data', stopReason: 'end' })
    expect(JSON.stringify(server.requests[1]!.body.messages)).toContain('station offline')
  })

  it('going over the call\'s maxToolCalls ends the turn as tool-call-budget', async () => {
    const server = await startServer({ fallback: { kind: 'tool-calls', calls: [{ name: 'weather', args: { city: 'Oslo' } }] } })
    const invoked: unknown[] = []
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'test-model' })
    const session = await host.openSession(sessionRequest({ tools: [weatherTool(invoked)], budgets: { maxToolCalls: 2 } }))
    const result = await session.prompt('loop forever', turnSignal())
    expect(result).toMatchObject({ stopReason: 'tool-call-budget', failureCause: 'tool-call-budget' })
    expect(result.reason).toContain('budget of 2')
    expect(invoked).toHaveLength(2)
    expect(server.requests).toHaveLength(3)
  })

  it('through the runtime: the tool call is journaled by the runtime and the answer is published', async () => {
    const server = await startServer({
      replies: [{ kind: 'tool-calls', calls: [{ name: 'lookup', args: { id: 'T-1' } }] }, { kind: 'text', text: 'Ticket T-1 is about billing.' }],
    })
    const workflow = defineWorkflow({
      name: 'triage',
      tools: { lookup: defineTool({ description: 'Look a ticket up', input: z.object({ id: z.string() }), run: ({ id }) => ({ id, topic: 'billing' }) }) },
      async run({ agent }) {
        const { answer } = await agent('What is T-1 about?')
        return { ok: true, answer }
      },
    })
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'test-model', attemptLog: 'always' })
    const run = await runWorkflowScript(workflow, { host, runsDir: tempDir() })
    expect(run.ok).toBe(true)
    expect(run.result).toEqual({ ok: true, answer: 'Ticket T-1 is about billing.' })
    const lines = readJsonLines(join(run.runDir, 'journal.jsonl'))
    expect(lines.filter((line) => line.type === 'tool_end')).toEqual([expect.objectContaining({ tool: 'lookup', status: 'completed' })])
    const end = lines.find((line) => line.type === 'agent_end')!
    const attemptsFile = join(run.runDir, 'calls', String(end.callId), 'transcript', LLM_ATTEMPTS_FILE)
    expect(existsSync(attemptsFile)).toBe(true)
    expect(readJsonLines(attemptsFile).map((attempt) => [attempt.step, attempt.outcome])).toEqual([[1, 'succeeded'], [2, 'succeeded']])
    expect(readFileSync(join(run.runDir, 'calls', String(end.callId), 'transcript', 'transcript.json'), 'utf8')).toContain('billing')
  })
})

describe('session history', () => {
  it('a clarification turn continues the same history: the second request carries the first exchange', async () => {
    const server = await startServer({ replies: [{ kind: 'text', text: 'Probably yellow-ish' }, { kind: 'text', text: 'yellow' }] })
    const workflow = defineWorkflow({
      name: 'choose',
      agents: { picker: { system: 'You pick colours.' } },
      async run({ agent }) {
        const { answer } = await agent('Colour of a banana?', { agent: 'picker', choice: ['yellow', 'blue'] })
        return { ok: true, answer }
      },
    })
    const run = await runWorkflowScript(workflow, { host: createAiSdkHost({ baseURL: server.baseURL, modelId: 'test-model' }), runsDir: tempDir() })
    expect(run.result).toEqual({ ok: true, answer: 'yellow' })
    expect(server.requests).toHaveLength(2)
    const messages = server.requests[1]!.body.messages!
    expect(messages.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'user'])
    expect(messages[0]!.content).toBe('You pick colours.')
    expect(messages[1]!.content).toBe('Colour of a banana?')
    expect(messages[2]!.content).toBe('Probably yellow-ish')
    expect(String(messages[3]!.content)).toContain('not one of the allowed values')
    const end = readJsonLines(join(run.runDir, 'journal.jsonl')).find((line) => line.type === 'agent_end')!
    // Usage is summed over both turns of the call.
    expect(end.usage).toEqual({ inputTokens: 20, outputTokens: 10 })
  })
})
