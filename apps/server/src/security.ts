import { isIP } from 'node:net'
import { networkInterfaces } from 'node:os'
import type { Context, MiddlewareHandler } from 'hono'
import { ServerOptionsError } from './auth.js'
import { ApiError } from './errors.js'
import type { Env } from './server-options.js'

/** The names a loopback server answers to. */
export const LOOPBACK_HOSTS: readonly string[] = ['127.0.0.1', 'localhost', '[::1]']

/** The content types of the inspector's form posts. */
export const FORM_CONTENT_TYPES: readonly string[] = ['application/x-www-form-urlencoded', 'multipart/form-data']
/** The content type of every other state-changing request. */
export const JSON_CONTENT_TYPES: readonly string[] = ['application/json']

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
/** The inspector's form posts; every other state-changing route takes JSON. */
const FORM_ROUTES = [/^\/login$/, /^\/logout$/, /^\/runs\/[^/]+\/deferred\/[^/]+\/(?:resolve|reject)$/]

/** The headers a cross-origin client may send, and read back, when `allowedOrigins` lets it in. */
const CORS_REQUEST_HEADERS = 'authorization, content-type, idempotency-key, last-event-id, mcp-session-id, mcp-protocol-version'
const CORS_EXPOSED_HEADERS = 'x-request-id, locus-execution-id, mcp-session-id, www-authenticate'

/** A host name or address as the `Host` header carries it, lower case and without its port; IPv6 keeps its brackets. */
export function hostnameOf(host: string): string {
  const text = host.trim().toLowerCase()
  if (text.startsWith('[')) {
    const end = text.indexOf(']')
    return end < 0 ? text : text.slice(0, end + 1)
  }
  const colon = text.lastIndexOf(':')
  // A bare IPv6 address (no brackets) has several colons and no port.
  if (colon >= 0 && text.indexOf(':') === colon) return text.slice(0, colon)
  return isIP(text) === 6 ? `[${text}]` : text
}

/**
 * Checks the names given to `allowedHosts` (`--allow-host`): host names or
 * addresses, without a scheme, path or port.
 *
 * @returns them as {@link hostnameOf} compares them
 * @throws ServerOptionsError naming the bad entry
 */
export function parseAllowedHosts(hosts: readonly string[] | undefined): string[] {
  return (hosts ?? []).map((entry) => {
    const text = entry.trim()
    const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text
    if (isIP(bare) !== 0) return hostnameOf(text)
    if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/i.test(text)) {
      throw new ServerOptionsError(
        `allowed host ${JSON.stringify(entry)} is not a host name or address: give the name clients put in their URLs, such as locus.example.com or 10.0.0.5, without scheme, port or path.`,
      )
    }
    return text.toLowerCase().replace(/\.$/, '')
  })
}

/**
 * Checks the origins given to `allowedOrigins` (`--allow-origin`): each
 * `scheme://host[:port]`, nothing after it.
 *
 * @returns them as browsers send them in `Origin`
 * @throws ServerOptionsError naming the bad entry
 */
export function parseAllowedOrigins(origins: readonly string[] | undefined): string[] {
  return (origins ?? []).map((entry) => {
    let url: URL | undefined
    try {
      url = new URL(entry.trim())
    } catch {
      url = undefined
    }
    const normalized = url === undefined ? undefined : `${url.protocol}//${url.host}`
    if (url === undefined || !['http:', 'https:'].includes(url.protocol) || url.origin !== normalized || entry.trim().replace(/\/$/, '') !== url.origin) {
      throw new ServerOptionsError(
        `allowed origin ${JSON.stringify(entry)} is not an origin: give the scheme, host and port of the page that calls the API, such as https://app.example.com or http://localhost:5173, with no path.`,
      )
    }
    return url.origin
  })
}

/**
 * The names a server listening on `bindAddress` answers to: the loopback
 * names always; the address itself; for a wildcard address (`0.0.0.0`, `::`)
 * every address of this machine's interfaces; and `extra` (`--allow-host`),
 * such as the DNS name a proxy or a client uses. A request whose `Host` is
 * none of them is refused (403), which defeats DNS rebinding.
 *
 * @example
 * ```ts
 * allowedHostsFor('127.0.0.1', ['locus.internal'])  // ['127.0.0.1', 'localhost', '[::1]', 'locus.internal']
 * ```
 */
export function allowedHostsFor(bindAddress: string, extra: readonly string[] = []): string[] {
  const names = new Set(LOOPBACK_HOSTS)
  const bare = bindAddress.startsWith('[') && bindAddress.endsWith(']') ? bindAddress.slice(1, -1) : bindAddress
  if (bare === '0.0.0.0' || bare === '::') {
    for (const addresses of Object.values(networkInterfaces())) {
      for (const address of addresses ?? []) names.add(hostnameOf(address.address.split('%')[0] ?? address.address))
    }
  } else if (bare !== '') {
    names.add(hostnameOf(bindAddress))
  }
  for (const name of parseAllowedHosts(extra)) names.add(name)
  return [...names]
}

/** Options of {@link securityMiddleware}. */
export interface SecurityOptions {
  /** The host names requests may be addressed to ({@link allowedHostsFor}). */
  readonly allowedHosts: readonly string[]
  /** Origins besides the server's own that may call it from a browser; CORS answers for exactly these. */
  readonly allowedOrigins: readonly string[]
}

/** The content types a state-changing request to `path` may carry. */
export function declaredContentTypes(path: string): readonly string[] {
  return FORM_ROUTES.some((route) => route.test(path)) ? FORM_CONTENT_TYPES : JSON_CONTENT_TYPES
}

/** True when a request carries no body at all: HTTP/1.1 sends one only with a `Content-Length` above 0 or a `Transfer-Encoding`. */
function hasNoBody(c: Context): boolean {
  if (c.req.raw.body === null) return true
  const length = c.req.header('content-length')
  return (length === undefined || length.trim() === '0') && c.req.header('transfer-encoding') === undefined
}

/**
 * The checks every request passes before any route sees it, with or without
 * API keys:
 *
 * - `Host` (and the request URL's host) must be one of `allowedHosts`, else
 *   403 `host_not_allowed`: a page that rebinds its DNS name to this
 *   server still sends its own name;
 * - `Origin`, when sent, must be the server's own (the origin of the `Host`
 *   the request came to) or one of `allowedOrigins`, else 403 `forbidden`:
 *   browsers send it on every cross-origin request and every POST;
 * - `POST`, `PUT`, `PATCH` and `DELETE` carry one of the route's declared
 *   content types ({@link declaredContentTypes}), or no body at all, else 415
 *   `unsupported_media_type`: `text/plain` and form bodies are what a page
 *   may send cross-origin without asking first;
 * - CORS: preflights from an allowed origin are answered (204) and its
 *   responses carry `Access-Control-Allow-Origin`; nothing else gets CORS
 *   headers, so browsers keep other pages from reading responses.
 */
export function securityMiddleware(options: SecurityOptions): MiddlewareHandler<Env> {
  const hosts = new Set(options.allowedHosts.map(hostnameOf))
  const origins = new Set(options.allowedOrigins)
  const allowedList = [...hosts].join(', ')
  return async (c, next) => {
    const url = new URL(c.req.url)
    const header = c.req.header('host')
    for (const host of header === undefined ? [url.host] : [header, url.host]) {
      if (!hosts.has(hostnameOf(host))) {
        throw new ApiError(
          'host_not_allowed',
          `This server does not answer to the host ${JSON.stringify(hostnameOf(host))}; it answers to ${allowedList}. Its operator can add a name to allowedHosts.`,
        )
      }
    }
    const origin = c.req.header('origin')
    const crossOrigin = origin !== undefined && !sameHost(origin, header ?? url.host)
    if (crossOrigin && !origins.has(origin)) {
      throw new ApiError('forbidden', `Requests from the origin ${JSON.stringify(origin)} are not accepted; the server's operator can add a web origin to allowedOrigins.`)
    }
    if (crossOrigin) {
      c.header('Access-Control-Allow-Origin', origin)
      c.header('Access-Control-Expose-Headers', CORS_EXPOSED_HEADERS)
      c.header('Vary', 'Origin', { append: true })
      if (c.req.method === 'OPTIONS' && c.req.header('access-control-request-method') !== undefined) {
        c.header('Access-Control-Allow-Methods', 'GET, POST, DELETE, OPTIONS')
        c.header('Access-Control-Allow-Headers', CORS_REQUEST_HEADERS)
        c.header('Access-Control-Max-Age', '600')
        return c.body(null, 204)
      }
    }
    if (STATE_CHANGING.has(c.req.method)) {
      const declared = declaredContentTypes(url.pathname)
      const contentType = c.req.header('content-type')
      const mediaType = contentType?.split(';')[0]?.trim().toLowerCase()
      const fits = mediaType === undefined || mediaType === '' ? hasNoBody(c) : declared.includes(mediaType)
      if (!fits) {
        throw new ApiError(
          'unsupported_media_type',
          `${c.req.method} ${url.pathname} takes ${declared.join(' or ')}${mediaType === undefined || mediaType === '' ? ', and this request has a body without a Content-Type' : `, not ${mediaType}`}; send the body with Content-Type: ${declared[0] ?? 'application/json'}.`,
        )
      }
    }
    await next()
    return undefined
  }
}

/** True when `origin` is the origin of the host the request came to (any scheme: a proxy may end TLS). */
function sameHost(origin: string, host: string): boolean {
  try {
    const url = new URL(origin)
    const requestHost = host.trim().toLowerCase()
    if (url.host === requestHost) return true
    // Default ports: `Host: example.com` and `Origin: https://example.com`.
    return url.port === '' && hostnameOf(requestHost) === hostnameOf(url.host) && !/:\d+$/.test(requestHost.replace(/^\[[^\]]*\]/, ''))
  } catch {
    return false // `null` and anything else that is not a URL
  }
}
