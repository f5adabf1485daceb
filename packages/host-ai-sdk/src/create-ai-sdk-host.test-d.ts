import type { AgentHost, AgentSession } from '@locus/runtime'
import { expectTypeOf, test } from 'vitest'
import type { AiSdkHostOptions, LlmAttempt } from './index.js'
import { createAiSdkHost } from './index.js'

test('the host is an AgentHost whose openSession always returns a promise', () => {
  const host = createAiSdkHost({ baseURL: 'http://localhost:11434/v1', modelId: 'llama3.2' })
  expectTypeOf(host).toExtend<AgentHost>()
  expectTypeOf(host.openSession).returns.toEqualTypeOf<Promise<AgentSession>>()
})

test('options: per-role overrides carry a seed-001 policy, and onLlmAttempt receives an LlmAttempt', () => {
  expectTypeOf<NonNullable<AiSdkHostOptions['onLlmAttempt']>>().parameter(0).toEqualTypeOf<LlmAttempt>()
  // @ts-expect-error: a retry policy has exactly the seed's four fields
  createAiSdkHost({ baseURL: 'http://x/v1', modelId: 'm', agents: { analyst: { retry: { max_retries: 3 } } } })
  // @ts-expect-error: model is an AI SDK model object; a string id goes in modelId
  createAiSdkHost({ baseURL: 'http://x/v1', model: 'gpt-4o' })
})
