import { randomBytes } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'
import type { Env, RequestLogEntry } from './server-options.js'

/** The response header that carries a request's id; error bodies carry it as `error.requestId`. */
export const REQUEST_ID_HEADER = 'x-request-id'

/** A new request id: `req_` and 16 hex digits. */
export function newRequestId(): string {
  return `req_${randomBytes(8).toString('hex')}`
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
