import type { Runtime, RunHandle, StoredRun } from '@locus/runtime'
import type { Context, Hono } from 'hono'
import type { z } from 'zod'
import type { ApiScope } from './auth.js'
import type { CallbackLinks } from './callback-signing.js'
import type { LiveState } from './run-resource.js'
import type { CreateServerOptions, Env, ErrorContext, EventTokens, ServerState } from './server-options.js'

/**
 * What a route module gets from the server: the app to add routes to, the
 * runtime, and the shared helpers every route uses (auth, parsing, loading a
 * run), so a module's routes behave exactly like the core API's.
 */
export interface RouteContext {
  readonly app: Hono<Env>
  readonly runtime: Runtime
  readonly state: ServerState
  /** Middleware that answers 401/403 unless the bearer key has `scope`. */
  readonly guard: (scope: ApiScope) => (c: Context<Env>, next: () => Promise<void>) => Promise<void>
  /** Parses with zod; a failure is a 400 `invalid_request` naming each field under `where`. */
  readonly parse: <T>(schema: z.ZodType<T>, value: unknown, where: string) => T
  /** The request body as JSON; a missing body is `{}` unless `required`, malformed JSON a 400. */
  readonly readJson: (c: Context, required: boolean) => Promise<unknown>
  /** A run as stored, after flushing the live execution so its lines are readable. */
  readonly load: (runId: string) => Promise<StoredRun>
  /** Keeps a handle the server started until it settles (shutdown waits on it). */
  readonly track: (handle: RunHandle) => void
  /** Reports an error that is the server's own fault, with the id of the request it happened in when there is one. */
  readonly report: (error: unknown, context?: ErrorContext) => void
  /** Throws 503 `shutting_down` once shutdown began. */
  readonly refuseWhenShuttingDown: () => void
  /** Whether this server executes the run now, and whether it was asked to cancel. */
  readonly liveState: (runId: string) => LiveState
  /** The options the server was built with. */
  readonly options: CreateServerOptions
  /** Issues and checks the run-scoped tokens of the events route. */
  readonly eventTokens: EventTokens
  /** Signs the callback URLs of deferrals; undefined without a callback secret. */
  readonly callbacks: CallbackLinks | undefined
}
