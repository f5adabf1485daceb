import { describe, expect, it } from 'vitest'
import { AiSdkHostOptionsError, isAiSdkHostOptionsError } from './ai-sdk-host-error.js'
import { parseAiSdkHostOptions } from './ai-sdk-host-options.js'
import { createAiSdkHost } from './create-ai-sdk-host.js'

function issuesOf(input: unknown): readonly string[] {
  try {
    parseAiSdkHostOptions(input)
  } catch (error) {
    if (isAiSdkHostOptionsError(error)) return error.issues
    throw error
  }
  return []
}

describe('createAiSdkHost options', () => {
  it('accepts a base URL with a model id', () => {
    expect(createAiSdkHost({ baseURL: 'http://localhost:11434/v1', modelId: 'llama3.2' }).name).toBe('ai-sdk')
    expect(createAiSdkHost({ api: 'openai', modelId: 'gpt-4o-mini', apiKey: 'sk', name: 'openai' }).name).toBe('openai')
  })

  it('refuses options with no way to reach a model, naming the field', () => {
    expect(issuesOf({ modelId: 'llama3.2' })).toEqual([expect.stringContaining('baseURL: give the server')])
    expect(issuesOf({ baseURL: 'http://localhost:11434/v1' })).toEqual([expect.stringContaining('modelId: give the default model id')])
  })

  it('names a bad base URL, an unknown option and a bad retry policy together', () => {
    const issues = issuesOf({ baseURL: 'not a url', modelId: 'm', modelID: 'typo', agents: { analyst: { retry: { timeout_secs: 1, max_retries: 0, backoff_base_secs: 0, backoff_max_secs: 0 } } } })
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.stringContaining('baseURL: baseURL must be an http(s) URL'),
        expect.stringContaining('unknown option modelID'),
        expect.stringContaining('agents.analyst.retry.max_retries'),
      ]),
    )
  })

  it('throws a typed AiSdkHostOptionsError with a stable code', () => {
    let thrown: unknown
    try {
      createAiSdkHost({ modelId: '' })
    } catch (error) {
      thrown = error
    }
    expect(AiSdkHostOptionsError.isInstance(thrown)).toBe(true)
    expect(thrown).toMatchObject({ code: 'AI_SDK_HOST_OPTIONS_INVALID' })
  })

  it('refuses a modelId that disagrees with the model object', () => {
    const model = { specificationVersion: 'v3', provider: 'p', modelId: 'a', supportedUrls: {}, doGenerate: () => undefined, doStream: () => undefined }
    expect(issuesOf({ model, modelId: 'b' })).toEqual([expect.stringContaining('disagrees')])
    expect(issuesOf({ model })).toEqual([])
  })

  it('names bad turn budgets, output caps and progress settings together', () => {
    const issues = issuesOf({
      baseURL: 'http://x/v1',
      modelId: 'm',
      turnBudget: { totalMs: -1, idle: 5 },
      maxOutputTokens: 1.5,
      progressIntervalMs: -2,
      agents: { a: { maxOutputTokens: 0, tools: 'no' } },
    })
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.stringContaining('turnBudget.totalMs'),
        expect.stringContaining('maxOutputTokens: maxOutputTokens must be an integer'),
        expect.stringContaining('progressIntervalMs'),
        expect.stringContaining('agents.a.maxOutputTokens'),
        expect.stringContaining('agents.a.tools'),
      ]),
    )
    expect(issues.some((issue) => issue.includes('idle'))).toBe(true)
  })

  it('accepts null bounds and a null output cap, which turn them off', () => {
    expect(issuesOf({ baseURL: 'http://x/v1', modelId: 'm', turnBudget: { totalMs: null, idleMs: null }, maxOutputTokens: null, streaming: false, tools: false })).toEqual([])
  })
})
