import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Context } from 'hono'
import { type ApiKey, type ApiScope, authorize, parseApiKeys } from '../auth.js'
import { ApiError } from '../errors.js'

/** The cookie a signed-in browser holds: `v1.<key id>.<expiry ms>.<HMAC>`, never the key itself. */
export const SESSION_COOKIE = 'locus_inspector'
/** How long a browser session lasts. */
export const SESSION_TTL_MS = 8 * 60 * 60 * 1000

/** Who a page request is, and what it may do. */
export interface Viewer {
  /** `anonymous` without keys, else the key id. */
  readonly principal: string
  readonly scopes: ReadonlySet<ApiScope> | 'all'
  /** Signed in through the cookie (so the page shows "Sign out"). */
  readonly viaCookie: boolean
  /** What the CSRF token is bound to. */
  readonly binding: string
}

export interface InspectorSessions {
  readonly keysConfigured: boolean
  /** The viewer of a request, or `undefined` when keys are configured and it brings neither a bearer key nor a session. */
  viewer(c: Context): Viewer | undefined
  /** Checks a key typed into the sign-in form; answers the cookie value. @throws ApiError unauthorized */
  signIn(secret: string): string
  /** The CSRF token of a viewer's forms. */
  csrf(viewer: Viewer): string
  /** True when `token` is the viewer's CSRF token. */
  checkCsrf(viewer: Viewer, token: string | undefined): boolean
}

const SESSION = /^v1\.(key-[0-9a-f]{8})\.(\d{1,15})\.([A-Za-z0-9_-]{43})$/

function cookieOf(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

/**
 * Browser sessions of the inspector. Without API keys every page is open
 * (the server then listens on loopback only). With keys, a browser signs in
 * once with a key that has `runs:read`: the server answers an HttpOnly,
 * SameSite=Strict cookie holding the key's id, an expiry and an HMAC under a
 * per-server secret, so the cookie names no secret and dies with the server.
 * Scripts and tests may send `Authorization: Bearer <key>` instead.
 */
export function createInspectorSessions(apiKeys: string | readonly string[] | undefined, now: () => number = Date.now): InspectorSessions {
  const keys: ApiKey[] = parseApiKeys(apiKeys)
  const secret = randomBytes(32)
  const mac = (text: string): Buffer => createHmac('sha256', secret).update(text).digest()
  const sign = (keyId: string, expiresAt: number): string => mac(`session\n${keyId}\n${expiresAt}`).toString('base64url')
  return {
    keysConfigured: keys.length > 0,
    viewer(c) {
      if (keys.length === 0) return { principal: 'anonymous', scopes: 'all', viaCookie: false, binding: 'anonymous' }
      const header = c.req.header('authorization')
      if (header !== undefined) {
        const id = authorize(keys, header, 'runs:read')
        const key = keys.find((candidate) => candidate.id === id)
        return { principal: id, scopes: key?.scopes ?? new Set(), viaCookie: false, binding: `bearer\n${id}` }
      }
      const cookie = cookieOf(c.req.header('cookie'), SESSION_COOKIE)
      const match = cookie === undefined ? null : SESSION.exec(cookie)
      if (match === null || cookie === undefined) return undefined
      const [, keyId, expiry, signature] = match as unknown as [string, string, string, string]
      const expected = Buffer.from(sign(keyId, Number(expiry)))
      const given = Buffer.from(signature)
      if (given.length !== expected.length || !timingSafeEqual(given, expected) || now() >= Number(expiry)) return undefined
      const key = keys.find((candidate) => candidate.id === keyId)
      if (key === undefined) return undefined
      return { principal: keyId, scopes: key.scopes, viaCookie: true, binding: `cookie\n${cookie}` }
    },
    signIn(typed) {
      const id = authorize(keys, `Bearer ${typed.trim()}`, 'runs:read')
      const expiresAt = now() + SESSION_TTL_MS
      return `v1.${id}.${expiresAt}.${sign(id, expiresAt)}`
    },
    csrf(viewer) {
      return mac(`csrf\n${viewer.binding}`).toString('base64url')
    },
    checkCsrf(viewer, token) {
      if (token === undefined) return false
      const expected = Buffer.from(mac(`csrf\n${viewer.binding}`).toString('base64url'))
      const given = Buffer.from(token)
      return given.length === expected.length && timingSafeEqual(given, expected)
    },
  }
}

/** Throws `forbidden` unless the viewer has `scope`. */
export function requireScope(viewer: Viewer, scope: ApiScope): void {
  if (viewer.scopes === 'all' || viewer.scopes.has(scope)) return
  throw new ApiError('forbidden', `The key ${viewer.principal} lacks the scope ${scope}; sign in with a key that has it.`)
}
