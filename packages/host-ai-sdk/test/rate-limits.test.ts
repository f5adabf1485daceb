import { describe, expect, it } from 'vitest'
import { AiSdkHostOptionsError, createAiSdkHost } from '../src/index.js'

describe('createAiSdkHost({ rateLimits })', () => {
  it('carries its limits on the host for the runtime to keep, and refuses a limit with neither number or a bad one', () => {
    const rateLimits = [{ match: { model: 'llama3' }, requestsPerMinute: 60, tokensPerMinute: 10_000 }]
    const host = createAiSdkHost({ baseURL: 'http://127.0.0.1:9/v1', modelId: 'llama3', rateLimits })
    expect(host.rateLimits).toEqual(rateLimits)
    expect(createAiSdkHost({ baseURL: 'http://127.0.0.1:9/v1', modelId: 'llama3' }).rateLimits).toBeUndefined()
    expect(() => createAiSdkHost({ baseURL: 'http://127.0.0.1:9/v1', modelId: 'm', rateLimits: [{ match: {} }] })).toThrow(AiSdkHostOptionsError)
    expect(() => createAiSdkHost({ baseURL: 'http://127.0.0.1:9/v1', modelId: 'm', rateLimits: [{ match: {} }] })).toThrow(/requestsPerMinute, tokensPerMinute or both/)
    expect(() => createAiSdkHost({ baseURL: 'http://127.0.0.1:9/v1', modelId: 'm', rateLimits: [{ match: {}, requestsPerMinute: 0 }] })).toThrow(/requestsPerMinute must be a positive whole number/)
  })
})
