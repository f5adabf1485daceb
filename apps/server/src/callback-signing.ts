import { createHmac, timingSafeEqual } from 'node:crypto'
import type { PendingDeferral } from '@locus/runtime'
import type { Context } from 'hono'

// Pre-signed callback URLs for deferrals: pure signing and checking, no I/O.
// The URL is derived, never stored: the same secret gives the same URL for a
// deferral on any server and after a restart.

/** Signs the callback URLs of a server's deferrals; undefined without a callback secret. */
export interface CallbackLinks {
  /** The deferral with its `callbackUrl` on the origin the request came to. */
  decorate(c: Context, runId: string, deferral: PendingDeferral): PendingDeferral & { callbackUrl?: string }
  readonly secret: string
}

/** What a callback URL stands for: one deferral of one run, until `expiresAtMs`. */
export interface CallbackClaim {
  readonly runId: string
  readonly deferredId: string
  /** Milliseconds since the epoch; the URL answers 410 from then on. */
  readonly expiresAtMs: number
}

/** What a callback URL carries besides its path: the expiry and the signature, as the query gives them (text, unchecked). */
export interface CallbackParams {
  readonly runId: string
  readonly deferredId: string
  readonly expires: string | undefined
  readonly signature: string | undefined
}

/** What checking a callback URL found. */
export type CallbackVerdict =
  | { readonly ok: true; readonly claim: CallbackClaim }
  | { readonly ok: false; readonly reason: 'bad-signature' }
  | { readonly ok: false; readonly reason: 'expired'; readonly expiresAtMs: number }

/** The shortest callback secret accepted (as API keys). */
export const MIN_CALLBACK_SECRET_LENGTH = 16

/** The path of a deferral's callback, under which it is POSTed. */
export const CALLBACK_PATH_PREFIX = '/v1/callbacks/deferred'

const EXPIRES = /^(?:0|[1-9]\d{0,14})$/
/** An HMAC-SHA256 in base64url without padding: 43 characters. */
const SIGNATURE = /^[A-Za-z0-9_-]{43}$/

/** The signature of a claim: HMAC-SHA256 with the secret over the claim as JSON (unambiguous whatever the ids hold), base64url. */
export function signCallback(secret: string, claim: CallbackClaim): string {
  return createHmac('sha256', secret)
    .update(JSON.stringify(['locus-callback-v1', claim.runId, claim.deferredId, claim.expiresAtMs]))
    .digest('base64url')
}

/** The path and query of a claim's callback URL (the caller puts its origin before it). */
export function callbackPathOf(secret: string, claim: CallbackClaim): string {
  const signature = signCallback(secret, claim)
  return `${CALLBACK_PATH_PREFIX}/${encodeURIComponent(claim.runId)}/${encodeURIComponent(claim.deferredId)}?expires=${String(claim.expiresAtMs)}&signature=${signature}`
}

/**
 * Checks a callback URL's parts against the secret, then its expiry against
 * `nowMs`: a signature that is malformed or not the secret's for exactly
 * these run, deferral and expiry is `bad-signature` (compared in constant
 * time); a good one at or past its expiry is `expired`.
 */
export function verifyCallback(secret: string, params: CallbackParams, nowMs: number): CallbackVerdict {
  const { expires, signature } = params
  if (expires === undefined || signature === undefined || !EXPIRES.test(expires) || !SIGNATURE.test(signature)) return { ok: false, reason: 'bad-signature' }
  const claim: CallbackClaim = { runId: params.runId, deferredId: params.deferredId, expiresAtMs: Number(expires) }
  // Compared as the text that was sent, so two spellings of one digest (base64url's spare bits) are not both accepted.
  const expected = Buffer.from(signCallback(secret, claim), 'utf8')
  const given = Buffer.from(signature, 'utf8')
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'bad-signature' }
  if (nowMs >= claim.expiresAtMs) return { ok: false, reason: 'expired', expiresAtMs: claim.expiresAtMs }
  return { ok: true, claim }
}
