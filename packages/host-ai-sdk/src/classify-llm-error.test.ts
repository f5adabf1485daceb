import { APICallError, InvalidResponseDataError } from 'ai'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { classifyLlmError } from './classify-llm-error.js'

const apiError = (statusCode: number | undefined, responseHeaders?: Record<string, string>, extra: { isRetryable?: boolean; cause?: unknown } = {}) =>
  new APICallError({
    message: 'scripted',
    url: 'http://127.0.0.1/v1/chat/completions',
    requestBodyValues: {},
    ...(statusCode === undefined ? {} : { statusCode }),
    ...(responseHeaders === undefined ? {} : { responseHeaders }),
    ...extra,
  })

describe('classifyLlmError', () => {
  it('429 is rate_limited and retryable, with Retry-After read as retryAfterMs', () => {
    expect(classifyLlmError(apiError(429, { 'retry-after': '7' }))).toMatchObject({ code: 'rate_limited', retryable: true, status: 429, retryAfterMs: 7000 })
    expect(classifyLlmError(apiError(429)).retryAfterMs).toBeUndefined()
  })

  it('a 503 with Retry-After carries retryAfterMs too, so the wait is a floor under the backoff', () => {
    expect(classifyLlmError(apiError(503, { 'retry-after': '2' }))).toMatchObject({ code: 'provider_error', retryable: true, status: 503, retryAfterMs: 2000 })
  })

  it('an error object inside a 200 stream is classified from its type and code, with no status', () => {
    expect(classifyLlmError({ message: 'Rate limit reached', type: 'rate_limit_error', code: 'rate_limit_exceeded' })).toMatchObject({ code: 'rate_limited', retryable: true })
    expect(classifyLlmError({ message: 'slow down', code: 429 })).toMatchObject({ code: 'rate_limited', retryable: true })
    expect(classifyLlmError({ message: 'The server is overloaded', type: 'server_error' })).toMatchObject({ code: 'provider_error', retryable: true })
    expect(classifyLlmError({ message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' })).toMatchObject({ code: 'refused', retryable: false })
    const other = classifyLlmError({ message: 'max_tokens is too large', type: 'invalid_request_error' })
    expect(other).toMatchObject({ code: 'provider_error', retryable: false })
    expect(other.status).toBeUndefined()
    expect(other.error).toBe('the server reported an error inside the stream (invalid_request_error): max_tokens is too large')
  })

  it('every 5xx is provider_error and retryable', () => {
    fc.assert(
      fc.property(fc.integer({ min: 500, max: 599 }), (status) => {
        const failure = classifyLlmError(apiError(status))
        return failure.code === 'provider_error' && failure.retryable && failure.status === status && failure.error.startsWith(`HTTP ${status}`)
      }),
    )
  })

  it('every 4xx other than 429 is terminal: 401/403 refused, 402 budget_exceeded, the rest provider_error', () => {
    fc.assert(
      fc.property(fc.integer({ min: 400, max: 499 }).filter((status) => status !== 429), (status) => {
        const failure = classifyLlmError(apiError(status))
        const expected = status === 401 || status === 403 ? 'refused' : status === 402 ? 'budget_exceeded' : 'provider_error'
        return !failure.retryable && failure.code === expected
      }),
    )
  })

  it('a connection that never got a response is provider_error and retryable', () => {
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })
    expect(classifyLlmError(apiError(undefined, undefined, { isRetryable: true, cause: reset }))).toMatchObject({ code: 'provider_error', retryable: true })
    expect(classifyLlmError(new TypeError('fetch failed', { cause: reset }))).toMatchObject({ code: 'provider_error', retryable: true })
  })

  it('a 2xx body that is not a chat completion is provider_error and terminal', () => {
    expect(classifyLlmError(apiError(200))).toMatchObject({ code: 'provider_error', retryable: false, status: 200 })
    expect(classifyLlmError(new InvalidResponseDataError({ data: {}, message: 'no choices' }))).toMatchObject({ code: 'provider_error', retryable: false })
    expect(classifyLlmError(new InvalidResponseDataError({ data: {} })).error).toContain('the AI SDK rejected the response')
  })

  it('anything else thrown is provider_error, terminal, with the thrown value kept as cause', () => {
    const thrown = new RangeError('boom')
    expect(classifyLlmError(thrown)).toEqual({ error: 'the LLM call threw: boom', code: 'provider_error', retryable: false, cause: thrown })
    expect(classifyLlmError('text').error).toBe('the LLM call threw: text')
  })
})
