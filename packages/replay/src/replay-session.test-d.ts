import type { AgentResultEnvelope } from '@locus/journal'
import { describe, expectTypeOf, it } from 'vitest'
import type { CanonicalRequest } from './canonical-request.js'
import type { ReplayDecision, ReplayLiveReason } from './replay-session.js'
import { requestKey } from './request-key.js'

describe('replay types', () => {
  it('a decision carries an envelope only in replay mode, and a reason only in live mode', () => {
    const decision = {} as ReplayDecision
    if (decision.mode === 'replay') {
      expectTypeOf(decision.envelope).toEqualTypeOf<AgentResultEnvelope>()
      expectTypeOf(decision).not.toHaveProperty('reason')
    } else {
      expectTypeOf(decision.reason).toEqualTypeOf<ReplayLiveReason>()
      expectTypeOf(decision).not.toHaveProperty('envelope')
    }
  })

  it('requestKey accepts a canonical request and a call with extra descriptive options', () => {
    expectTypeOf(requestKey).toBeCallableWith({} as CanonicalRequest)
    expectTypeOf(requestKey).toBeCallableWith({ prompt: 'p', attempts: 3, label: 'l', phase: 'x' })
  })
})
