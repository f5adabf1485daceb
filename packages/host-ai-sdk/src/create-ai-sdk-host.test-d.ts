import type { AgentHost, AgentSession } from '@locus/host-contract'
import { expectTypeOf, test } from 'vitest'
import type { AiSdkAgentSession, AiSdkHostOptions, AiSdkHostSettings, AiSdkTurnResult, LlmAttempt, LlmProgress } from './index.js'
import { createAiSdkHost } from './index.js'

test('the host is an AgentHost whose openSession always returns a promise', () => {
  const host = createAiSdkHost({ baseURL: 'http://localhost:11434/v1', modelId: 'llama3.2' })
  expectTypeOf(host).toExtend<AgentHost>()
  expectTypeOf(host.openSession).returns.toEqualTypeOf<Promise<AiSdkAgentSession>>()
  expectTypeOf<AiSdkAgentSession>().toExtend<AgentSession>()
})

test('a turn result carries its LLM attempts, and a prompt may take a progress listener', () => {
  expectTypeOf<AiSdkAgentSession['prompt']>().returns.toEqualTypeOf<Promise<AiSdkTurnResult>>()
  expectTypeOf<AiSdkTurnResult['llmAttempts']>().toEqualTypeOf<readonly LlmAttempt[]>()
  expectTypeOf<Parameters<AiSdkAgentSession['prompt']>[1]['onProgress']>().toEqualTypeOf<((progress: LlmProgress) => void) | undefined>()
  expectTypeOf<AiSdkHostSettings>().not.toHaveProperty('headers')
})

test('options: per-role overrides carry a seed-001 policy, and onLlmAttempt receives an LlmAttempt', () => {
  expectTypeOf<NonNullable<AiSdkHostOptions['onLlmAttempt']>>().parameter(0).toEqualTypeOf<LlmAttempt>()
  // @ts-expect-error: a retry policy has exactly the seed's four fields
  createAiSdkHost({ baseURL: 'http://x/v1', modelId: 'm', agents: { analyst: { retry: { max_retries: 3 } } } })
  // @ts-expect-error: model is an AI SDK model object; a string id goes in modelId
  createAiSdkHost({ baseURL: 'http://x/v1', model: 'gpt-4o' })
})
