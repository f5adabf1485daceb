import { DEFAULT_RETRY_POLICY, isRetryPolicyError } from '@locus/retry'
import type { SessionRequest } from '@locus/host-contract'
import { describe, expect, it } from 'vitest'
import { resolveAgentSettings } from './resolve-agent-settings.js'

const fast = { timeout_secs: 5, max_retries: 2, backoff_base_secs: 0, backoff_max_secs: 0 }
const slow = { timeout_secs: 60, max_retries: 5, backoff_base_secs: 2, backoff_max_secs: 30 }
const hostRetry = { timeout_secs: null, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 60 }

function request(agent: string, agentConfig?: SessionRequest['agentConfig']): Pick<SessionRequest, 'agent' | 'agentConfig'> {
  return { agent, agentConfig }
}

describe('resolveAgentSettings: precedence host agents[role] > workflow agent config > host default', () => {
  const options = { baseURL: 'http://x/v1', modelId: 'base-model', retry: hostRetry, agents: { analyst: { model: 'big-model', retry: fast, system: 'host system' } } }

  it('the host override wins field by field', () => {
    const settings = resolveAgentSettings(options, request('analyst', { model: 'workflow-model', retry: slow, system: 'workflow system' }) as SessionRequest)
    expect(settings).toMatchObject({ modelId: 'big-model', retry: fast, system: 'host system', sources: { model: 'host-agent', retry: 'host-agent' } })
  })

  it('the workflow config applies where the host says nothing for the role', () => {
    const settings = resolveAgentSettings(options, request('writer', { model: 'workflow-model', retry: slow, system: 'workflow system' }) as SessionRequest)
    expect(settings).toMatchObject({ modelId: 'workflow-model', retry: slow, system: 'workflow system', sources: { model: 'workflow', retry: 'workflow' } })
  })

  it('the host defaults apply last, and without any retry the seed default (one attempt, no timeout)', () => {
    expect(resolveAgentSettings(options, request('writer') as SessionRequest)).toMatchObject({ modelId: 'base-model', retry: hostRetry, system: undefined })
    expect(resolveAgentSettings({ baseURL: 'http://x/v1', modelId: 'm' }, request('writer') as SessionRequest)).toMatchObject({ retry: DEFAULT_RETRY_POLICY, sources: { retry: 'none' } })
  })

  it('useWorkflowModels: false ignores the workflow model only', () => {
    const settings = resolveAgentSettings({ ...options, useWorkflowModels: false }, request('writer', { model: 'gpt-4o', retry: slow }) as SessionRequest)
    expect(settings).toMatchObject({ modelId: 'base-model', retry: slow })
  })

  it('a malformed workflow retry policy throws RetryPolicyError naming the field', () => {
    let thrown: unknown
    try {
      resolveAgentSettings(options, request('writer', { retry: { ...slow, max_retries: 0 } }) as SessionRequest)
    } catch (error) {
      thrown = error
    }
    expect(isRetryPolicyError(thrown)).toBe(true)
    expect((thrown as Error).message).toContain('max_retries')
  })

  it('a role named like an Object.prototype member is not an override', () => {
    expect(resolveAgentSettings(options, request('toString') as SessionRequest).modelId).toBe('base-model')
  })
})
