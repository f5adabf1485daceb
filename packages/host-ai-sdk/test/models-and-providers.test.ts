import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { runWorkflowScript } from '@locus/runtime'
import { streamText } from 'ai'
import { describe, expect, it } from 'vitest'
import { createAiSdkHost } from '../src/index.js'
import { sessionRequest, startServer, tempDir, turnSignal } from './helpers.js'

describe('models per role', () => {
  it('a per-role model id picks the model from the same provider; the host override beats the workflow, which beats the default', async () => {
    const server = await startServer()
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'small', agents: { analyst: { model: 'large', system: 'Be thorough.' } } })
    await runWorkflowScript(
      {
        name: 'roles',
        agents: { analyst: { model: 'ignored-by-host-override', system: 'workflow system' }, writer: { model: 'writer-model' }, helper: {} },
        async run({ agent }) {
          await agent('a', { agent: 'analyst' })
          await agent('b', { agent: 'writer' })
          await agent('c', { agent: 'helper' })
          return { ok: true }
        },
      },
      { host, runsDir: tempDir() },
    )
    expect(server.requests.map((request) => request.body.model)).toEqual(['large', 'writer-model', 'small'])
    expect(server.requests[0]!.body.messages![0]).toEqual({ role: 'system', content: 'Be thorough.' })
    expect(host.resolveModelId({ agent: 'writer', agentConfig: { model: 'writer-model' } })).toBe('writer-model')
  })

  it('useWorkflowModels: false keeps a local server on the models it serves', async () => {
    const server = await startServer()
    const host = createAiSdkHost({ baseURL: server.baseURL, modelId: 'llama3.2', useWorkflowModels: false })
    const session = await host.openSession(sessionRequest({ agentConfig: { model: 'gpt-4o' } }))
    await session.prompt('hi', turnSignal())
    expect(server.requests[0]!.body.model).toBe('llama3.2')
  })

  it('a host given only a model object refuses other model ids as sdk-unavailable, naming the fix', async () => {
    const server = await startServer()
    const model = createOpenAICompatible({ name: 'x', baseURL: server.baseURL }).chatModel('only-this')
    const host = createAiSdkHost({ model })
    const session = await host.openSession(sessionRequest())
    expect(await session.prompt('hi', turnSignal())).toMatchObject({ text: 'ok' })
    const thrown = await host.openSession(sessionRequest({ agentConfig: { model: 'other' } })).catch((error: unknown) => error)
    expect(thrown).toMatchObject({ failureCause: 'sdk-unavailable' })
    expect((thrown as Error).message).toContain('useWorkflowModels: false')
  })

  it('a provider function resolves each id once and is reused', async () => {
    const server = await startServer()
    const provider = createOpenAICompatible({ name: 'mine', baseURL: server.baseURL })
    const asked: string[] = []
    const host = createAiSdkHost({ provider: (id) => { asked.push(id); return provider.chatModel(id) }, modelId: 'm1' })
    for (let index = 0; index < 3; index += 1) await (await host.openSession(sessionRequest())).prompt('hi', turnSignal())
    expect(asked).toEqual(['m1'])
  })

  it('api: openai talks to the same wire format through @ai-sdk/openai', async () => {
    const server = await startServer({ replies: [{ kind: 'text', text: 'from openai provider' }] })
    const host = createAiSdkHost({ api: 'openai', baseURL: server.baseURL, modelId: 'gpt-4o-mini', apiKey: 'sk-test' })
    const result = await (await host.openSession(sessionRequest())).prompt('hi', turnSignal())
    expect(result).toMatchObject({ text: 'from openai provider', stopReason: 'end' })
    expect(server.requests[0]).toMatchObject({ path: '/v1/chat/completions', body: { model: 'gpt-4o-mini' } })
    expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-test')
  })
})

describe('the test server speaks the streaming wire format too', () => {
  it('streams text deltas and usage as server-sent events that the AI SDK reads', async () => {
    const server = await startServer({ replies: [{ kind: 'text', text: 'streamed answer', usage: { promptTokens: 4, completionTokens: 2 } }] })
    const model = createOpenAICompatible({ name: 'x', baseURL: server.baseURL, includeUsage: true }).chatModel('m')
    const result = streamText({ model, prompt: 'hi', maxRetries: 0 })
    expect(await result.text).toBe('streamed answer')
    expect(await result.finishReason).toBe('stop')
    expect((await result.usage).outputTokens).toBe(2)
    expect(server.requests[0]!.body.stream).toBe(true)
  })

  it('streams tool calls', async () => {
    const server = await startServer({ replies: [{ kind: 'tool-calls', calls: [{ name: 'lookup', args: { id: 'A' } }] }] })
    const model = createOpenAICompatible({ name: 'x', baseURL: server.baseURL }).chatModel('m')
    const { z } = await import('zod')
    const result = streamText({ model, prompt: 'hi', maxRetries: 0, tools: { lookup: { inputSchema: z.object({ id: z.string() }) } } })
    expect((await result.toolCalls).map((call) => [call.toolName, call.input])).toEqual([['lookup', { id: 'A' }]])
    expect(await result.finishReason).toBe('tool-calls')
  })
})
