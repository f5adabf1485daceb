import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { HOST_SPECIFICATION_VERSION } from './agent-host.js'
import { HostError, failureCauseOf } from './host-error.js'
import { hostSpecificationProblem } from './specification.js'

const openSession = () => ({ prompt: () => Promise.resolve({ text: 'x', stopReason: 'end' as const }), transcript: () => [] })

describe('hostSpecificationProblem', () => {
  it('accepts a host that declares v1 or declares nothing', () => {
    expect(HOST_SPECIFICATION_VERSION).toBe('v1')
    expect(hostSpecificationProblem({ name: 'a', specificationVersion: 'v1', openSession })).toBeUndefined()
    expect(hostSpecificationProblem({ name: 'a', openSession })).toBeUndefined()
  })

  it('refuses any other declared version, naming the host, both versions and the fix', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.boolean()).filter((version) => version !== 'v1'), (version) => {
        const problem = hostSpecificationProblem({ name: 'remote', specificationVersion: version, openSession })
        expect(problem).toContain('host "remote" implements host contract')
        expect(problem).toContain('this runtime implements "v1"')
        expect(problem).toContain('use a host built for "v1"')
      }),
    )
  })

  it('refuses a value without openSession()', () => {
    for (const value of [undefined, null, 'host', {}, { openSession: 'no' }]) {
      expect(hostSpecificationProblem(value)).toBe('host must be an AgentHost (an object with openSession())')
    }
  })
})

describe('HostError', () => {
  it('carries its failure cause, which failureCauseOf reads back; anything else is unclassified', () => {
    const error = new HostError('host-turn-timeout', 'slow')
    expect(HostError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ code: 'HOST_ERROR', name: 'HostError', failureCause: 'host-turn-timeout' })
    expect(failureCauseOf(error)).toBe('host-turn-timeout')
    expect(failureCauseOf(new Error('x'))).toBe('unclassified')
    expect(failureCauseOf({ failureCause: 'not-a-cause' })).toBe('unclassified')
  })
})
