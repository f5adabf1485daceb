import { describe, expect, it } from 'vitest'
import { LocusError } from '@locus/outcome'
import { CLI_ERROR_CODES, CliError } from './cli-error.js'
import { EXIT_CODES, exitCodeOf } from './exit-codes.js'

describe('exit codes', () => {
  it('0 completed, 1 failed (a partial result is failed), 130 cancelled, 2 for usage', () => {
    expect(exitCodeOf('completed')).toBe(0)
    expect(exitCodeOf('failed')).toBe(1)
    expect(exitCodeOf('cancelled')).toBe(130)
    expect(EXIT_CODES.usage).toBe(2)
  })
})

describe('CliError', () => {
  it('keeps its stable code and cause, and is recognised by its brand across copies', () => {
    const cause = new Error('ENOENT')
    const error = new CliError('WORKFLOW_FILE_NOT_FOUND', 'No file "x"', { cause })
    expect(error.code).toBe('WORKFLOW_FILE_NOT_FOUND')
    expect(error.cause).toBe(cause)
    expect(CliError.isInstance(error)).toBe(true)
    // Another installed copy brands its errors with the same registered symbol: still recognised.
    const brand = Symbol.for('@locus/cli:CliError')
    expect(CliError.isInstance(Object.assign(new LocusError('x', { code: 'RUNS_DIR_NOT_WRITABLE' }), { [brand]: true }))).toBe(true)
    // A code alone does not make a CliError: another class may not borrow it.
    expect(CliError.isInstance(new LocusError('x', { code: 'RUNS_DIR_NOT_WRITABLE' }))).toBe(false)
    expect(CliError.isInstance(new LocusError('x', { code: 'SOMETHING_ELSE' }))).toBe(false)
    expect(CLI_ERROR_CODES).toContain('WORKFLOW_SYNTAX_ERROR')
  })
})
