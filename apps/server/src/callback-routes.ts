import type { DeferredAnswer, DeferredAnswerOutcome, PendingDeferral } from '@locus/runtime'
import type { Context } from 'hono'
import { ServerOptionsError } from './auth.js'
import { CALLBACK_PATH_PREFIX, type CallbackLinks, MIN_CALLBACK_SECRET_LENGTH, callbackPathOf, verifyCallback } from './callback-signing.js'
import { ApiError } from './errors.js'
import type { RouteContext } from './route-context.js'
import { CallbackBodySchema, RunIdSchema } from './schemas.js'

/** How long a callback URL of a deferral without a deadline is good for, from when it opened. */
export const DEFAULT_CALLBACK_TTL_SECONDS = 7 * 24 * 60 * 60


/**
 * Checks the server's callback options: a secret of at least 16 characters,
 * a positive whole `callbackTtlSeconds`.
 *
 * @throws ServerOptionsError naming the bad option (never the secret)
 */
export function createCallbackLinks(secret: string | undefined, ttlSeconds: number | undefined): CallbackLinks | undefined {
  if (ttlSeconds !== undefined && (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0)) {
    throw new ServerOptionsError(`callbackTtlSeconds must be a positive whole number of seconds, got ${String(ttlSeconds)}.`)
  }
  if (secret === undefined || secret === '') return undefined
  if (secret.length < MIN_CALLBACK_SECRET_LENGTH || /\s/.test(secret)) {
    throw new ServerOptionsError(
      `The callback secret (--callback-secret, LOCUS_CALLBACK_SECRET) must be at least ${MIN_CALLBACK_SECRET_LENGTH} characters with no whitespace (generate one with \`openssl rand -hex 32\`).`,
    )
  }
  const ttlMs = (ttlSeconds ?? DEFAULT_CALLBACK_TTL_SECONDS) * 1000
  return {
    secret,
    decorate(c, runId, deferral) {
      const expiresAtMs = expiryOf(deferral, ttlMs)
      if (expiresAtMs === undefined) return deferral
      const url = new URL(c.req.url)
      return { ...deferral, callbackUrl: `${url.protocol}//${url.host}${callbackPathOf(secret, { runId, deferredId: deferral.deferredId, expiresAtMs })}` }
    },
  }
}

/**
 * When a deferral's callback URL expires: its deadline when it has one (past
 * it the deferral cannot be answered), else `ttlMs` after it opened. Derived
 * from the journal alone, so the URL is the same on every listing, on every
 * server with the secret, and after a restart.
 */
function expiryOf(deferral: PendingDeferral, ttlMs: number): number | undefined {
  if (deferral.expiresAt !== null) return Date.parse(deferral.expiresAt)
  return deferral.openedAt === undefined ? undefined : Date.parse(deferral.openedAt) + ttlMs
}

/** What the deferral answer routes (the API's and the callback's) answer for an outcome of `answerDeferred`. */
export function answerResponse(c: Context, runId: string, deferredId: string, outcome: DeferredAnswerOutcome): Response {
  if (outcome.ok) return c.json({ runId, deferredId, status: outcome.status }, 200)
  if (outcome.status === 'invalid') throw new ApiError('invalid_request', `The result does not fit the tool's output schema; deferral ${deferredId} stays open.`, { issues: outcome.issues })
  if (outcome.status === 'conflict') throw new ApiError('already_resolved', outcome.message)
  throw new ApiError('not_found', outcome.message)
}

/**
 * `POST /v1/callbacks/deferred/{id}/{deferredId}?expires=&signature=`: the
 * one route without an API key. The signature (HMAC-SHA256 with the server's
 * callback secret over the run, the deferral and the expiry) is the
 * authority: a bad one is 403, a good one past its expiry 410, and neither
 * reads the body or writes anything. A good one settles the deferral as the
 * API's resolve or reject would, journaled `decidedBy: 'callback'`,
 * `via: 'callback'`; a deferral settled already answers as a repeated answer
 * does (200 `already-answered` for the same decision, 409 `already_resolved`
 * for another). The request checks of every route (Host, Origin, JSON
 * content type, body size) apply.
 */
export function mountCallbackRoutes(routes: RouteContext): void {
  const links = routes.callbacks
  const now = routes.options.now ?? Date.now
  routes.app.post(`${CALLBACK_PATH_PREFIX}/:id/:deferredId`, async (c) => {
    if (links === undefined) throw new ApiError('not_found', 'This server signs no callback URLs: it has no callback secret (--callback-secret, LOCUS_CALLBACK_SECRET).')
    const params = { runId: c.req.param('id'), deferredId: c.req.param('deferredId'), expires: c.req.query('expires'), signature: c.req.query('signature') }
    const verdict = verifyCallback(links.secret, params, now())
    if (!verdict.ok && verdict.reason === 'bad-signature') {
      throw new ApiError('forbidden', 'This callback URL is not valid: its signature does not match its run, deferral and expiry. Use the callbackUrl GET /v1/runs/{id}/deferred lists, unchanged.')
    }
    if (!verdict.ok) {
      throw new ApiError(
        'callback_expired',
        `This callback URL expired at ${new Date(verdict.expiresAtMs).toISOString()}; a deferral still open can be answered with an API key (POST /v1/runs/{id}/deferred/{deferredId}/resolve).`,
      )
    }
    const runId = routes.parse(RunIdSchema, verdict.claim.runId, 'id')
    const { deferredId } = verdict.claim
    await routes.load(runId)
    const body = routes.parse(CallbackBodySchema, await routes.readJson(c, true), 'body')
    const answer: DeferredAnswer =
      body.error === undefined
        ? { kind: 'resolved', result: JSON.parse(JSON.stringify(body.result ?? null)) as never, decidedBy: 'callback', via: 'callback' }
        : { kind: 'rejected', error: body.error, retryable: body.retryable === true, ...(body.code === undefined ? {} : { code: body.code }), decidedBy: 'callback', via: 'callback' }
    return answerResponse(c, runId, deferredId, await routes.runtime.answerDeferred(runId, deferredId, answer))
  })
}
