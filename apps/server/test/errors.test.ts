import { ERROR_CODE_REGISTRY, type ErrorCodeEntry, HTTP_STATUS_OF_KIND, LocusError } from '@locus/outcome'
import { describe, expect, it } from 'vitest'
import { API_CODE_OF_KIND, API_CODE_OVERRIDES, SERVER_ERROR_CODES, STATUS_OF_CODE, type ServerErrorCode, apiCodeOf, openApiDocument } from '../src/index.js'
import { toApiError } from '../src/errors.js'

const overrides: Readonly<Record<string, ServerErrorCode>> = API_CODE_OVERRIDES
const registry: Readonly<Record<string, ErrorCodeEntry>> = ERROR_CODE_REGISTRY

type Operation = { responses: Record<string, { description?: string }> }

/** Every `METHOD path` of the document that declares `code` under `status`. */
function declaring(document: { paths: Record<string, Record<string, Operation>> }, status: number, code: ServerErrorCode): string[] {
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations)
      .filter(([, operation]) => (operation.responses[String(status)]?.description ?? '').split(', ').includes(code))
      .map(([method]) => `${method} ${path}`),
  )
}

describe('package error codes and the API', () => {
  it('answers each kind of the registry at the status the registry gives it', () => {
    for (const [kind, code] of Object.entries(API_CODE_OF_KIND)) {
      expect(STATUS_OF_CODE[code], kind).toBe(HTTP_STATUS_OF_KIND[kind as keyof typeof HTTP_STATUS_OF_KIND])
    }
    // The failures of work answer 422, not 500; a store that cannot be used 503.
    expect(apiCodeOf('AGENT_CALL_FAILED')).toBe('unprocessable')
    expect(apiCodeOf('JOURNAL_READ_FAILED')).toBe('unavailable')
    expect(apiCodeOf('WORKFLOW_CANCELLED')).toBe('cancelled')
  })

  it('keeps the overrides short: a conflict with a code of its own stays 409, and the server’s own configuration is its fault', () => {
    expect(Object.keys(overrides).length).toBeLessThanOrEqual(16)
    for (const [code, apiCode] of Object.entries(overrides)) {
      const entry = registry[code]
      expect(entry, `${code} is not in ERROR_CODE_REGISTRY`).toBeDefined()
      if (apiCode === 'internal_error') {
        expect(entry?.kind, code).toBe('usage')
      } else {
        // Only a more precise code at the kind's own status.
        expect(STATUS_OF_CODE[apiCode], code).toBe(HTTP_STATUS_OF_KIND[entry?.kind ?? 'internal'])
        expect(apiCode, code).not.toBe(API_CODE_OF_KIND[entry?.kind ?? 'internal'])
      }
    }
    expect(apiCodeOf('RUN_EXISTS')).toBe('run_exists')
    expect(apiCodeOf('RUN_OWNED')).toBe('run_owned')
    expect(apiCodeOf('RUN_COMPLETED')).toBe('run_terminal')
    expect(apiCodeOf('SERVER_OPTIONS_INVALID')).toBe('internal_error')
    expect(apiCodeOf('WORKFLOW_INPUT_INVALID')).toBe('invalid_request')
    expect(apiCodeOf('NOT_REGISTERED')).toBe('internal_error')
  })

  it('answers every registered code with one API code at one status, declared in /openapi.json for the operations that do work', () => {
    const document = openApiDocument() as unknown as { paths: Record<string, Record<string, Operation>> }
    for (const [code, entry] of Object.entries(registry)) {
      const reported: unknown[] = []
      const answered = toApiError(new LocusError(`a ${code} error`, { code }), (error) => reported.push(error))
      expect(SERVER_ERROR_CODES, code).toContain(answered.code)
      expect(answered.code, code).toBe(apiCodeOf(code))
      expect(answered.status, code).toBe(STATUS_OF_CODE[answered.code])
      if (!Object.hasOwn(overrides, code)) expect(answered.status, code).toBe(HTTP_STATUS_OF_KIND[entry.kind])
      if (answered.code === 'internal_error') {
        // Not the client's to fix: logged, and no package detail in the answer.
        expect(reported, code).toHaveLength(1)
        expect(answered.message, code).not.toContain(code)
      } else {
        expect(answered.message).toBe(`a ${code} error`)
        // A 5xx is the server's trouble, so its log hears of it too.
        expect(reported, code).toHaveLength(answered.status >= 500 ? 1 : 0)
      }
      const where = declaring(document, answered.status, answered.code)
      expect(where, `${code} → ${String(answered.status)} ${answered.code}`).toContain('post /v1/workflows/{name}/runs')
      expect(where, code).toContain('post /v1/runs/{id}/resume')
    }
  })

  it('declares the store’s 503 and 500 on every route that reads the store, and not on /healthz', () => {
    const document = openApiDocument() as unknown as { paths: Record<string, Record<string, Operation>> }
    expect(declaring(document, 503, 'unavailable')).toContain('get /v1/runs/{id}')
    expect(declaring(document, 500, 'internal_error')).toContain('get /v1/runs')
    expect(declaring(document, 500, 'internal_error')).not.toContain('get /healthz')
  })
})
