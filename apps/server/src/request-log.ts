import { randomFillSync } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'
import type { Env, RequestLogEntry } from './server-options.js'

/** The response header that carries a request's id; error bodies carry it as `error.requestId`. */
export const REQUEST_ID_HEADER = 'x-request-id'

/** Random bytes drawn 4 KiB at a time: one call into the CSPRNG serves 512 request ids instead of one. */
const pool = Buffer.alloc(4096)
let used = pool.length

/** A new request id: `req_` and 16 random hex digits. */
export function newRequestId(): string {
  if (used + 8 > pool.length) {
    randomFillSync(pool)
    used = 0
  }
  used += 8
  return `req_${pool.toString('hex', used - 8, used)}`
}

/**
 * Gives every request an id (`c.get('requestId')`), sends it back in
 * `x-request-id`, and tells `onResponse` how the request was answered, so a
 * client's report ("request req_... failed") finds its line in the log.
 */
export function requestLogMiddleware(onResponse: ((entry: RequestLogEntry) => void) | undefined, now: () => number = Date.now): MiddlewareHandler<Env> {
  return async (c, next) => {
    const requestId = newRequestId()
    const started = now()
    c.set('requestId', requestId)
    c.header(REQUEST_ID_HEADER, requestId)
    await next()
    if (!c.res.headers.has('x-hono-already-sent') && !c.res.headers.has(REQUEST_ID_HEADER)) {
      try {
        c.res.headers.set(REQUEST_ID_HEADER, requestId)
      } catch {
        // A response with immutable headers (one fetched from elsewhere) goes out as it is.
      }
    }
    if (onResponse === undefined) return
    const error = c.get('errorDetail')
    try {
      onResponse({ requestId, method: c.req.method, path: c.req.path, status: c.res.status, durationMs: now() - started, ...(error === undefined ? {} : { error }) })
    } catch {
      // A log hook that throws does not change the answer.
    }
  }
}
