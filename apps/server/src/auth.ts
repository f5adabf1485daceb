import { createHash, timingSafeEqual } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { LocusError } from '@locus/outcome'
import { ApiError } from './errors.js'

/** What an API key may do. */
export const API_SCOPES = ['runs:start', 'runs:read', 'runs:cancel', 'deferred:resolve', 'worker'] as const
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

/** The code of {@link ServerOptionsError}, registered in `ERROR_CODE_REGISTRY` (@locus/outcome) as a `usage` code of @locus/server. */
export const SERVER_OPTIONS_INVALID = 'SERVER_OPTIONS_INVALID'

/** The package error codes the server throws itself (not the API's codes, {@link SERVER_ERROR_CODES}). */
export const SERVER_LOCUS_ERROR_CODES = [SERVER_OPTIONS_INVALID] as const

/** Bad server options: API keys, a host without keys, a port. */
export class ServerOptionsError extends LocusError {
  declare readonly code: typeof SERVER_OPTIONS_INVALID
  constructor(message: string) {
    super(message, { code: SERVER_OPTIONS_INVALID })
    this.name = 'ServerOptionsError'
  }
}

const SECRET = /^[^\s,:]+$/
/** A key given by its hash: `sha256:` and 64 hex digits. */
const HASHED = /^sha256:([0-9a-fA-F]{64})$/

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest()
}

/**
 * Parses API keys: a comma-separated string (the `LOCUS_API_KEYS` format) or a
 * list of entries. An entry is `secret` (every scope) or
 * `secret:scope+scope` (only those), e.g.
 * `ci-4f9a0c1d2e3b4a5f:runs:start+runs:read`. A secret is at least 16
 * characters with no whitespace, `,` or `:`. An entry may give the secret's
 * SHA-256 instead, `sha256:<64 hex digits>` (with `:scope+scope` after it if
 * it has fewer scopes), as {@link readApiKeysFile} needs. Keys are kept as hashes.
 *
 * @throws ServerOptionsError naming the bad entry (by position, never by secret)
 */
export function parseApiKeys(spec: string | readonly string[] | undefined, describeEntry?: (index: number, count: number) => string): ApiKey[] {
  if (spec === undefined) return []
  const entries = (typeof spec === 'string' ? spec.split(',') : spec).map((entry) => entry.trim()).filter((entry) => entry.length > 0)
  const keys: ApiKey[] = []
  entries.forEach((entry, index) => {
    const hashed = entry.startsWith('sha256:')
    const colon = entry.indexOf(':', hashed ? 'sha256:'.length : 0)
    const secret = colon < 0 ? entry : entry.slice(0, colon)
    const where = describeEntry?.(index, entries.length) ?? `API key ${index + 1} of ${entries.length}`
    const digest = HASHED.exec(secret)?.[1]
    if (hashed && digest === undefined) {
      throw new ServerOptionsError(`${where}: a hashed key is "sha256:" and the 64 hex digits of the secret's SHA-256 (\`printf %s "$SECRET" | sha256sum\`), then ":scope+scope" if it has fewer scopes.`)
    }
    if (!hashed && (!SECRET.test(secret) || secret.length < MIN_API_KEY_LENGTH)) {
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
    const hash = digest === undefined ? sha256(secret) : Buffer.from(digest, 'hex')
    if (keys.some((key) => key.hash.equals(hash))) throw new ServerOptionsError(`${where}: the same secret is listed twice; give each client its own key.`)
    keys.push({ id: `key-${hash.toString('hex').slice(0, 8)}`, hash, scopes: new Set(scopes) })
  })
  return keys
}

/**
 * Reads API keys from a file that holds hashes, never secrets: one key a
 * line, `sha256:<hex>` or `sha256:<hex>:scope+scope`, where `<hex>` is
 * the secret's SHA-256 (`printf %s "$SECRET" | sha256sum`); blank lines and
 * lines starting with `#` are skipped. The file is the `LOCUS_API_KEYS_FILE`
 * of {@link startServer}.
 *
 * @returns the entries, for {@link parseApiKeys}
 * @throws ServerOptionsError when the file cannot be read, or for a line that is not a hashed key (by line number, never by content)
 */
export function readApiKeysFile(path: string): string[] {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new ServerOptionsError(`Cannot read the API keys file ${path}: ${error instanceof Error ? error.message : String(error)}`)
  }
  const entries: string[] = []
  const lines: number[] = []
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) return
    if (!line.startsWith('sha256:')) {
      throw new ServerOptionsError(
        `${path} line ${index + 1}: the keys file holds hashes, not secrets: write \`sha256:<hex>:scope+scope\` with <hex> from \`printf %s "$SECRET" | sha256sum\` (plain secrets go in LOCUS_API_KEYS).`,
      )
    }
    entries.push(line)
    lines.push(index + 1)
  })
  // Parsed here too, so a bad line is named by its line number.
  parseApiKeys(entries, (index) => `${path} line ${String(lines[index])}`)
  return entries
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
