import { ERROR_CODE_REGISTRY, type ErrorCodeEntry, HTTP_STATUS_OF_KIND, LocusError } from '@locus/outcome'
import { describe, expect, it } from 'vitest'
import { PACKAGE_ERROR_TABLE, SERVER_ERROR_CODES, STATUS_OF_CODE, type ServerErrorCode } from '../src/index.js'
import { toApiError } from '../src/errors.js'

const table = PACKAGE_ERROR_TABLE as Readonly<Record<string, ServerErrorCode>>
const registry: Readonly<Record<string, ErrorCodeEntry>> = ERROR_CODE_REGISTRY

describe('PACKAGE_ERROR_TABLE and the package error registry', () => {
  it('lists only registered codes, each mapped to a code of the API', () => {
    for (const [code, serverCode] of Object.entries(table)) {
      expect(Object.hasOwn(registry, code), `${code} is not in ERROR_CODE_REGISTRY`).toBe(true)
      expect(SERVER_ERROR_CODES).toContain(serverCode)
    }
  })

  it('answers every registered code with an API code, at the HTTP status the registry gives its kind unless it is the server’s own fault', () => {
    for (const [code, entry] of Object.entries(registry)) {
      const reported: unknown[] = []
      const answered = toApiError(new LocusError(`a ${code} error`, { code }), (error) => reported.push(error))
      expect(SERVER_ERROR_CODES, code).toContain(answered.code)
      if (answered.code === 'internal_error') {
        // Not the client's to fix: logged, and no package detail in the answer.
        expect(reported, code).toHaveLength(1)
        expect(answered.message, code).not.toContain(code)
      } else {
        expect(answered.code, code).toBe(table[code])
        expect(STATUS_OF_CODE[answered.code], code).toBe(HTTP_STATUS_OF_KIND[entry.kind])
        expect(answered.message).toBe(`a ${code} error`)
      }
    }
  })
})
