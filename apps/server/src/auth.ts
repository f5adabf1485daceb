import { createHash, timingSafeEqual } from 'node:crypto'
import { LocusError } from '@locus/outcome'
import { ApiError } from './errors.js'

/** What an API key may do. */
export const API_SCOPES = ['runs:start', 'runs:read', 'runs:cancel', 'deferred:resolve'] as const
export type ApiScope = (typeof API_SCOPES)[number]

/** A key as the server keeps it: its SHA-256, never the secret. */
export interface ApiKey {
  /** A short, non-secret name for logs and idempotency scopes: `key-` and the first 8 hex digits of the hash. */
  readonly id: string
  readonly hash: Buffer
  readonly scopes: ReadonlySet<ApiScope>
}

/** The shortest secret accepted. */
export const MIN_API_KEY_LENGTH = 16

/** Bad server options: API keys, a host without keys, a port. */
export class ServerOptionsError extends LocusError {
  declare readonly code: 'SERVER_OPTIONS_INVALID'
  constructor(message: string) {
    super(message, { code: 'SERVER_OPTIONS_INVALID' })
    this.name = 'ServerOptionsError'
  }
}

const SECRET = /^[^\s,:]+$/

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest()
}

/**
 * Parses API keys: a comma-separated string (the `LOCUS_API_KEYS` format) or a
 * list of entries. An entry is `secret` (every scope) or
 * `secret:scope+scope` (only those), e.g.
 * `ci-4f9a0c1d2e3b4a5f:runs:start+runs:read`. A secret is at least 16
 * characters with no whitespace, `,` or `:`. Keys are kept as hashes.
 *
 * @throws ServerOptionsError naming the bad entry (by position, never by secret)
 */
export function parseApiKeys(spec: string | readonly string[] | undefined): ApiKey[] {
  if (spec === undefined) return []
  const entries = (typeof spec === 'string' ? spec.split(',') : spec).map((entry) => entry.trim()).filter((entry) => entry.length > 0)
  const keys: ApiKey[] = []
  entries.forEach((entry, index) => {
    const colon = entry.indexOf(':')
    const secret = colon < 0 ? entry : entry.slice(0, colon)
    const where = `API key ${index + 1} of ${entries.length}`
    if (!SECRET.test(secret) || secret.length < MIN_API_KEY_LENGTH) {
      throw new ServerOptionsError(`${where}: a secret must be at least ${MIN_API_KEY_LENGTH} characters with no whitespace, "," or ":" (generate one with \`openssl rand -hex 24\`).`)
    }
    let scopes: ApiScope[] = [...API_SCOPES]
    if (colon >= 0) {
      const named = entry.slice(colon + 1).split('+').map((scope) => scope.trim())
      const unknown = named.filter((scope) => !(API_SCOPES as readonly string[]).includes(scope))
      if (named.length === 0 || unknown.length > 0) {
        throw new ServerOptionsError(`${where}: unknown scope ${unknown.map((scope) => JSON.stringify(scope)).join(', ') || '""'}; scopes are ${API_SCOPES.join(', ')}, joined with "+" (secret:runs:start+runs:read).`)
      }
      scopes = named as ApiScope[]
    }
    const hash = sha256(secret)
    if (keys.some((key) => key.hash.equals(hash))) throw new ServerOptionsError(`${where}: the same secret is listed twice; give each client its own key.`)
    keys.push({ id: `key-${hash.toString('hex').slice(0, 8)}`, hash, scopes: new Set(scopes) })
  })
  return keys
}

/**
 * Checks a request's `Authorization` header against the keys and the scope a
 * route needs. With no keys configured every request passes as `anonymous`.
 *
 * @returns the id of the key that authorised the request
 * @throws ApiError `unauthorized` (no or unknown bearer key) or `forbidden` (the key lacks the scope)
 */
export function authorize(keys: readonly ApiKey[], header: string | undefined, scope: ApiScope): string {
  if (keys.length === 0) return 'anonymous'
  const challenge = { 'WWW-Authenticate': 'Bearer realm="locus"' }
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '')
  if (match === null) {
    throw new ApiError('unauthorized', 'This server needs an API key: send `Authorization: Bearer <key>`.', { headers: challenge })
  }
  const hash = sha256(match[1] as string)
  // Compare against every key, in constant time each, so timing tells nothing about which one nearly matched.
  let found: ApiKey | undefined
  for (const key of keys) if (timingSafeEqual(key.hash, hash)) found = key
  if (found === undefined) throw new ApiError('unauthorized', 'The API key is not one this server accepts.', { headers: challenge })
  if (!found.scopes.has(scope)) {
    throw new ApiError('forbidden', `The API key ${found.id} lacks the scope ${scope}; it has ${[...found.scopes].join(', ')}.`)
  }
  return found.id
}
