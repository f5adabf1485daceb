import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { ApiError } from './errors.js'
import type { RouteContext } from './route-context.js'
import type { EventTokens } from './server-options.js'
import { EventsTokenSchema, RunIdSchema } from './schemas.js'

/** Options of {@link createEventTokens}. */
export interface EventTokensOptions {
  /** How long a token is good for. */
  readonly ttlMs: number
  /** The clock expiry is read from. */
  readonly now: () => number
  /** The HMAC key. @default 32 random bytes, new for each server, so a token works only with the server that issued it */
  readonly secret?: Buffer | undefined
}

const TOKEN = /^v1\.(\d{1,15})\.([A-Za-z0-9_-]{43})$/

/**
 * Tokens of the form `v1.<expiry ms>.<HMAC-SHA256 of run id and expiry>`,
 * signed with a per-server secret: a token names no secret and no scope
 * beyond reading the one run's events until it expires.
 */
export function createEventTokens(options: EventTokensOptions): EventTokens {
  const secret = options.secret ?? randomBytes(32)
  const sign = (runId: string, expiresAtMs: number): Buffer => createHmac('sha256', secret).update(`${runId}\n${expiresAtMs}`).digest()
  return {
    issue(runId) {
      const expiresAtMs = options.now() + options.ttlMs
      return { token: `v1.${expiresAtMs}.${sign(runId, expiresAtMs).toString('base64url')}`, expiresAt: new Date(expiresAtMs).toISOString() }
    },
    verify(token, runId) {
      const renew = `POST /v1/runs/${encodeURIComponent(runId)}/events-token for a new one.`
      const match = TOKEN.exec(token)
      if (match === null) throw new ApiError('unauthorized', `The events token is malformed; ${renew}`)
      const expiresAtMs = Number(match[1])
      const given = Buffer.from(match[2] as string, 'base64url')
      if (!timingSafeEqual(given, sign(runId, expiresAtMs))) {
        throw new ApiError('unauthorized', `The events token is not valid for run "${runId}": it was issued for another run or by another server; ${renew}`)
      }
      if (options.now() >= expiresAtMs) {
        throw new ApiError('unauthorized', `The events token expired at ${new Date(expiresAtMs).toISOString()}; ${renew}`)
      }
      return `events-token:${runId}`
    },
  }
}

/** `POST /v1/runs/{id}/events-token`: a token for `GET /v1/runs/{id}/events?token=...`, for clients that cannot send headers. */
export function mountEventsToken(routes: RouteContext): void {
  routes.app.post('/v1/runs/:id/events-token', routes.guard('runs:read'), async (c) => {
    const runId = routes.parse(RunIdSchema, c.req.param('id'), 'id')
    await routes.load(runId)
    const issued = routes.eventTokens.issue(runId)
    const body = EventsTokenSchema.parse({ runId, ...issued, events: `/v1/runs/${encodeURIComponent(runId)}/events?token=${encodeURIComponent(issued.token)}` })
    return c.json(body, 200)
  })
}
