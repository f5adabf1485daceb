// The signing of deferral callback URLs, over many inputs: a URL as signed verifies until its expiry
// (on an injected clock), and changing any one field, or any one character of the signature, fails it.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type CallbackClaim, callbackPathOf, signCallback, verifyCallback } from '../src/callback-signing.js'

const SECRET = 'callback-secret-0123456789abcdef'
const id = fc.string({ minLength: 1, maxLength: 40 })
const claimArb = fc.record({ runId: id, deferredId: id, expiresAtMs: fc.integer({ min: 1, max: 10 ** 14 }) })

const paramsOf = (claim: CallbackClaim, signature = signCallback(SECRET, claim)) => ({
  runId: claim.runId,
  deferredId: claim.deferredId,
  expires: String(claim.expiresAtMs),
  signature,
})

describe('callback URL signing', () => {
  it('a signed URL verifies before its expiry and answers expired from it on, on the injected clock', () => {
    fc.assert(
      fc.property(claimArb, fc.integer({ min: 0, max: 10 ** 14 }), (claim, now) => {
        const verdict = verifyCallback(SECRET, paramsOf(claim), now)
        if (now < claim.expiresAtMs) expect(verdict).toEqual({ ok: true, claim })
        else expect(verdict).toEqual({ ok: false, reason: 'expired', expiresAtMs: claim.expiresAtMs })
      }),
    )
  })

  it('any changed run id, deferral id or expiry fails the signature, also past the expiry (403 before 410)', () => {
    fc.assert(
      fc.property(claimArb, fc.constantFrom('runId', 'deferredId', 'expires'), id, fc.integer({ min: 0, max: 10 ** 14 }), (claim, field, other, now) => {
        const params = paramsOf(claim)
        const tampered =
          field === 'expires'
            ? { ...params, expires: other.length % 2 === 0 ? String(claim.expiresAtMs + 1 + (other.length % 7)) : `0${params.expires}` }
            : { ...params, [field]: params[field] === other ? `${other}x` : other }
        expect(verifyCallback(SECRET, tampered, now)).toEqual({ ok: false, reason: 'bad-signature' })
      }),
    )
  })

  it('any changed character of the signature, or another secret, fails', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    fc.assert(
      fc.property(claimArb, fc.nat(42), fc.nat(63), fc.string({ minLength: 16, maxLength: 40 }), (claim, at, pick, otherSecret) => {
        const signature = signCallback(SECRET, claim)
        let replacement = alphabet[pick] ?? 'A'
        if (replacement === signature[at]) replacement = alphabet[(pick + 1) % alphabet.length] ?? 'B'
        const changed = `${signature.slice(0, at)}${replacement}${signature.slice(at + 1)}`
        expect(verifyCallback(SECRET, paramsOf(claim, changed), 0)).toEqual({ ok: false, reason: 'bad-signature' })
        if (otherSecret !== SECRET) expect(verifyCallback(otherSecret, paramsOf(claim), 0)).toEqual({ ok: false, reason: 'bad-signature' })
      }),
    )
  })

  it('a missing, truncated or padded signature or expiry fails', () => {
    const claim = { runId: 'run-1', deferredId: 'call-1-a1', expiresAtMs: 2_000 }
    const good = paramsOf(claim)
    for (const params of [
      { ...good, signature: undefined },
      { ...good, expires: undefined },
      { ...good, signature: good.signature.slice(1) },
      { ...good, signature: `${good.signature}=` },
      { ...good, expires: ' 2000' },
      { ...good, expires: '2e3' },
    ]) {
      expect(verifyCallback(SECRET, params, 0)).toEqual({ ok: false, reason: 'bad-signature' })
    }
  })

  it('the path names the run, the deferral, the expiry and the signature, and is the same each time (derived, not stored)', () => {
    const claim = { runId: 'run 1/x', deferredId: 'call-1-a1', expiresAtMs: 1_700_000_000_000 }
    const path = callbackPathOf(SECRET, claim)
    expect(path).toBe(`/v1/callbacks/deferred/run%201%2Fx/call-1-a1?expires=1700000000000&signature=${signCallback(SECRET, claim)}`)
    expect(callbackPathOf(SECRET, claim)).toBe(path)
    expect(callbackPathOf(`${SECRET}-other`, claim)).not.toBe(path)
  })
})
