import type { ScheduleStore } from '@locus/store'
// The server's shared types: its options, the state kept between requests,
// the Hono environment of every route. A leaf module (it imports no module of
// the server), so route modules and the server can all depend on it without
// an import circle.
import type { OutcomeStore } from '@locus/partial'
import type { TriggerQueue } from '@locus/protocol'
import type { RunHandle, Runtime } from '@locus/runtime'

/**
 * The Hono environment of every route: the principal the bearer key named,
 * the request's id, and (for an error answer) what the log is told about it.
 */
export type Env = { Variables: { principal: string; requestId: string; errorDetail: { code: string; detail: string } | undefined } }

/** Where an error reported to `onError` happened. */
export interface ErrorContext {
  /** The id the response carried in `x-request-id`. */
  readonly requestId?: string | undefined
  readonly method?: string | undefined
  readonly path?: string | undefined
}

/** One answered request, as {@link CreateServerOptions.onResponse} is told about it. */
export interface RequestLogEntry {
  /** The id the response carried in `x-request-id` (and in its error body). */
  readonly requestId: string
  readonly method: string
  /** The path, without the query (which may hold an events token). */
  readonly path: string
  readonly status: number
  readonly durationMs: number
  /** For an error answer: its code, and the message as it was before paths and advice were taken out of the response. */
  readonly error?: { readonly code: string; readonly detail: string } | undefined
}

/** Short-lived tokens that let a client without headers (EventSource) read one run's event stream. */
export interface EventTokens {
  /** A token for `runId`'s event stream, good until `expiresAt`. */
  issue(runId: string): { token: string; expiresAt: string }
  /**
   * Checks a token against the run the request names.
   *
   * @returns the principal to record for the request
   * @throws ApiError `unauthorized` for a token of another run or server, a malformed one, or one past its expiry
   */
  verify(token: string, runId: string): string
}

/** Options of {@link createServer}. */
export interface CreateServerOptions {
  /** The runtime every route calls: its workflows, store and live runs. */
  readonly runtime: Runtime
  /** Told of every run the server starts or resumes and tracks (a timer parking watches them). */
  readonly onTrack?: ((handle: RunHandle) => void) | undefined
  /** The schedules of the runs' store, for GET /v1/schedules (`RunStore.schedules`); without it those routes answer 404. */
  readonly schedules?: ScheduleStore | undefined
  /**
   * Bearer API keys: `secret` (every scope) or `secret:scope+scope`, as a list
   * or one comma-separated string (the `LOCUS_API_KEYS` format). Without
   * keys every request is allowed; {@link startServer} then listens on
   * loopback only. `createServer` does not read the environment.
   */
  readonly apiKeys?: string | readonly string[] | undefined
  /** Request bodies over this many bytes answer 413. @default 1 MiB */
  readonly bodyLimitBytes?: number | undefined
  /** How often an event stream sends a heartbeat comment. @default 15_000 */
  readonly heartbeatMs?: number | undefined
  /** The `retry:` an event stream tells clients to wait before reconnecting. @default 2_000 */
  readonly sseRetryMs?: number | undefined
  /**
   * How long a token stream (GET /v1/runs/{id}/stream) waits for a client's
   * socket to take more before it drops the client: a subscriber that falls
   * this far behind is disconnected, and resumes from the last `id:` it got
   * (`Last-Event-ID`). The store's writer never waits on a reader. @default 10_000
   */
  readonly streamDrainTimeoutMs?: number | undefined
  /**
   * How many bytes a live journal event stream (GET /v1/runs/{id}/events of
   * a run this server executes) may hold unsent for a client before the
   * client is disconnected as fallen behind; it reconnects with
   * `Last-Event-ID` and misses nothing. The run never waits for a reader.
   * @default 1 MiB
   */
  readonly eventBufferBytes?: number | undefined
  /** The longest `wait` of GET /v1/runs/{id}/result, in seconds; a longer one is cut to it. @default 60 */
  readonly maxResultWaitSeconds?: number | undefined
  /** How long an Idempotency-Key is remembered, in the runtime's store (so across restarts). @default 24 hours */
  readonly idempotencyTtlMs?: number | undefined
  /**
   * Told about errors that are the server's fault (answered as
   * `internal_error`), with the id of the request they happened in (the
   * response's `x-request-id`). @default console.error
   */
  readonly onError?: ((error: unknown, context?: ErrorContext) => void) | undefined
  /**
   * Told about every answered request: its id, method, path, status and
   * duration, and for an error answer its code and the whole message (the
   * response's message leaves without paths or command-line advice). The
   * server's access log. @default none
   */
  readonly onResponse?: ((entry: RequestLogEntry) => void) | undefined
  /**
   * Host names requests may be addressed to (`Host`), besides the loopback
   * names `127.0.0.1`, `localhost` and `[::1]`; any other answers 403
   * `host_not_allowed`. {@link startServer} adds the names of the address
   * it listens on. @default none
   */
  readonly allowedHosts?: readonly string[] | undefined
  /**
   * Web origins (`https://app.example.com`) whose pages may call the API:
   * their requests pass the `Origin` check and CORS answers for exactly
   * these. A request from any other origin answers 403. @default none (CORS off)
   */
  readonly allowedOrigins?: readonly string[] | undefined
  /**
   * The queue HTTP workers poll (`/v1/worker/*`): give the runtime the same
   * queue as its `worker` (`createRuntime({ defaults: { worker: queue } })`).
   * Without it the worker routes answer 404.
   */
  readonly workers?: TriggerQueue | undefined
  /** The longest `wait` of GET /v1/worker/triggers, in seconds; a longer one is cut to it. @default 60 */
  readonly maxWorkerWaitSeconds?: number | undefined
  /** How long a token of POST /v1/runs/{id}/events-token is good for. @default 300_000 (5 minutes) */
  readonly eventsTokenTtlMs?: number | undefined
  /**
   * The secret callback URLs of deferrals are signed with (HMAC-SHA256): with
   * it, each deferral `GET /v1/runs/{id}/deferred` lists carries a
   * `callbackUrl` that settles it without an API key (`via: 'callback'`).
   * At least 16 characters. The URL is derived, not stored: the same secret
   * keeps it valid across restarts and servers. {@link startServer} reads
   * `LOCUS_CALLBACK_SECRET` when this is not given. @default none (no callback URLs)
   */
  readonly callbackSecret?: string | undefined
  /** How long the callback URL of a deferral without a deadline is good for, from when it opened; one with a deadline is good until it. @default 604_800 (7 days) */
  readonly callbackTtlSeconds?: number | undefined
  /** The clock events tokens are issued and checked by, callback URLs expire by, idempotency keys expire by, and the inspector's report window ends at. @default Date.now */
  readonly now?: (() => number) | undefined
  /**
   * The outcome store runs record their outcomes in (SQLite or PostgreSQL,
   * as `openOutcomeStore` of @locus/partial opens it): the inspector's
   * `/report` page reads it. The server only reads; it does not close it.
   * Without it `/report` says how to give one.
   */
  readonly outcomes?: OutcomeStore | undefined
}

/** What the server keeps between requests, shared with {@link startServer}'s shutdown. */
export interface ServerState {
  shuttingDown: boolean
  /** Aborted at shutdown: event streams end and long polls answer. */
  readonly shutdown: AbortController
  /** The executions this server started or resumed and that have not ended, by `runId/executionId`. */
  readonly runs: Map<string, RunHandle>
  /** Executions this server asked to cancel, by `runId/executionId`. */
  readonly cancelling: Set<string>
  openStreams: number
}

