import { setMaxListeners } from 'node:events'
import type { JournalLine } from '@locus/journal'
import { jsonDepthProblem } from '@locus/outcome'
import { type DeferredAnswer, type PendingDeferral, type RunBudgets, type RunHandle, type RuntimeRunOptions, type StoredRun, checkSignal } from '@locus/runtime'
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response'
import { ARTIFACT_KEYS, type ExecutionInfo, type ExecutionRef } from '@locus/store'
import { type Context, Hono } from 'hono'
import { z } from 'zod'
import { type ApiKey, type ApiScope, authorize, parseApiKeys } from './auth.js'
import { ApiError, toApiError } from './errors.js'
import { type JournalEventStreamOptions, type LineSubscription, type PushSink, endWhenEnded, journalEventStream, pushJournalEvents, writeJournalEvents } from './event-stream.js'
import { createEventTokens, mountEventsToken } from './events-token.js'
import { canonicalJson, createIdempotencyKeys, idempotencyKeyOf } from './idempotency.js'
import { openApiDocument } from './openapi.js'
import type { RouteContext } from './route-context.js'
import type { CreateServerOptions, Env, ErrorContext, ServerState } from './server-options.js'
import { mountWorkerRoutes } from './worker-routes.js'
import { mountScheduleRoutes } from './schedule-routes.js'
import { mountDeployCheck } from './deploy-check-route.js'
import { answerResponse, createCallbackLinks, mountCallbackRoutes } from './callback-routes.js'
import { mountMcpRoute } from './mcp-route.js'
import { mountTokenStream } from './token-stream.js'
import { mountInspector } from './inspector/mount-inspector.js'
import { clientLines, clientMessage, clientValue } from './redact.js'
import { REQUEST_ID_HEADER, requestLogMiddleware } from './request-log.js'
import { LOOPBACK_HOSTS, parseAllowedHosts, parseAllowedOrigins, securityMiddleware } from './security.js'
import { type LiveState, hasEnded, linksOf, resultOf, rowListItem, rowStatusOf, runResource, statusOfExecution } from './run-resource.js'
import {
  type BudgetsSchema,
  CancelBodySchema,
  RejectBodySchema,
  ResolveBodySchema,
  SignalBodySchema,
  UpdateBodySchema,
  UpdateQuerySchema,
  EventsQuerySchema,
  JournalQuerySchema,
  ListRunsQuerySchema,
  ResultQuerySchema,
  ResumeBodySchema,
  RunIdSchema,
  type RunStatus,
  StartRunBodySchema,
  TERMINAL_STATUSES,
} from './schemas.js'

/**
 * Route modules beyond the core API, each in its own file: one function that
 * adds its routes to the app through the {@link RouteContext}.
 */
const ROUTE_MODULES: readonly ((routes: RouteContext) => void)[] = [mountWorkerRoutes, mountScheduleRoutes, mountEventsToken, mountTokenStream, mountInspector, mountMcpRoute, mountDeployCheck, mountCallbackRoutes]

const DEFAULT_BODY_LIMIT = 1024 * 1024
const DEFAULT_PAGE = 20
const POLL_MS = 200

const keyOf = (runId: string, executionId: string): string => `${runId}/${executionId}`

export function parse<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const parsed = schema.safeParse(value)
  if (parsed.success) return parsed.data
  const issues = parsed.error.issues.map((issue) => `${[where, ...issue.path.map(String)].join('.')}: ${issue.message}`)
  throw new ApiError('invalid_request', `Invalid ${where}: ${issues.join('; ')}`, { issues })
}

export async function readJson(c: Context, required: boolean): Promise<unknown> {
  const text = await c.req.text()
  if (text.trim().length === 0) {
    if (required) throw new ApiError('invalid_request', 'This request needs a JSON body, e.g. {"input": {...}}.', { issues: ['body: missing'] })
    return {}
  }
  try {
    return JSON.parse(text) as unknown
  } catch (error) {
    throw new ApiError('invalid_request', `The body is not valid JSON: ${error instanceof Error ? error.message : String(error)}`, {
      issues: ['body: not JSON'],
    })
  }
}

function runIdOf(c: Context): string {
  return parse(RunIdSchema, c.req.param('id'), 'id')
}

function nameOf(c: Context): string {
  return c.req.param('name') ?? ''
}

function sleep(ms: number, signals: readonly AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer)
      for (const signal of signals) signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    for (const signal of signals) {
      if (signal.aborted) {
        done()
        return
      }
      signal.addEventListener('abort', done, { once: true })
    }
  })
}

/** The latest execution (the root or the last resume), or the one `execution` names; 404 otherwise. */
function pickExecution(runId: string, infos: readonly ExecutionInfo[], execution: string | undefined): ExecutionInfo {
  if (execution === undefined) {
    const latest = infos.filter((info) => info.kind === 'root' || info.kind === 'resume').at(-1)
    if (latest === undefined) throw new ApiError('not_found', `Run "${runId}" has no execution yet.`)
    return latest
  }
  const found = infos.find((info) => info.executionId === execution)
  if (found === undefined) {
    throw new ApiError('not_found', `Run "${runId}" has no execution "${execution}"; it has ${infos.map((info) => info.executionId).join(', ')}.`)
  }
  return found
}

/** A `Last-Event-ID` of a stream that follows a run: `<executionId>:<seq>`. */
function runEventCursor(text: string): { readonly executionId: string; readonly afterSeq: number } {
  const match = /^([A-Za-z0-9][A-Za-z0-9._-]{0,127}):(-1|0|[1-9][0-9]{0,15})$/.exec(text)
  if (match === null) {
    throw new ApiError('invalid_request', 'Last-Event-ID of a follow=run stream is <executionId>:<seq>, as its events carry; send the id of the last event received.', {
      issues: ['Last-Event-ID: not <executionId>:<seq>'],
    })
  }
  return { executionId: match[1] ?? '', afterSeq: Number(match[2]) }
}

/** Reading past the limit goes on (discarding) up to this, so a client still sending gets its 413 instead of a reset. */
const DRAIN_LIMIT = 16 * 1024 * 1024

/**
 * A request body that is read only when a route reads it (after
 * authentication, so an unauthenticated request is answered without its body
 * being read), and that fails with 413 `payload_too_large` past `limit`
 * bytes, after reading on and discarding up to {@link DRAIN_LIMIT}.
 */
function limitedBody(body: ReadableStream<Uint8Array>, limit: number): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  let size = 0
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read()
      if (done) {
        controller.close()
        return
      }
      size += value.byteLength
      if (size <= limit) {
        controller.enqueue(value)
        return
      }
      while (size <= DRAIN_LIMIT) {
        const rest = await reader.read()
        if (rest.done) break
        size += rest.value.byteLength
      }
      if (size > DRAIN_LIMIT) await reader.cancel().catch(() => undefined)
      controller.error(new ApiError('payload_too_large', `The request body is larger than ${limit} bytes.`))
    },
    cancel(reason) {
      return reader.cancel(reason)
    },
  })
}

interface Cursor {
  readonly createdAt: number
  readonly runId: string
}

function decodeCursor(text: string): Cursor {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown
    if (Array.isArray(value) && typeof value[0] === 'number' && typeof value[1] === 'string') return { createdAt: value[0], runId: value[1] }
  } catch {
    // Reported below.
  }
  throw new ApiError('invalid_request', 'cursor is not one this server gave out; pass nextCursor from the previous page.', { issues: ['query.cursor: invalid'] })
}

/** Builds the app and its state; {@link createServer} and {@link startServer} share it. */
export function buildServer(options: CreateServerOptions): { app: Hono<Env>; state: ServerState; track: (handle: RunHandle) => void } {
  const { runtime } = options
  const keys: ApiKey[] = parseApiKeys(options.apiKeys)
  const report =
    options.onError ??
    ((error: unknown, context?: ErrorContext) => {
      console.error(`[locus server]${context?.requestId === undefined ? '' : ` ${context.requestId}`}`, error)
    })
  const allowedHosts = [...LOOPBACK_HOSTS, ...parseAllowedHosts(options.allowedHosts)]
  const allowedOrigins = parseAllowedOrigins(options.allowedOrigins)
  const heartbeatMs = options.heartbeatMs ?? 15_000
  const sseRetryMs = options.sseRetryMs ?? 2_000
  const eventBufferBytes = options.eventBufferBytes ?? 1024 * 1024
  const maxWaitSeconds = options.maxResultWaitSeconds ?? 60
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT
  const idempotency = createIdempotencyKeys({ ttlMs: options.idempotencyTtlMs ?? 24 * 60 * 60 * 1000, store: runtime.store, now: options.now })
  const state: ServerState = { shuttingDown: false, shutdown: new AbortController(), runs: new Map(), cancelling: new Set(), openStreams: 0 }
  // Every open event stream and worker poll listens to it; thousands at once are expected, not a leak.
  setMaxListeners(0, state.shutdown.signal)
  let openApi: Record<string, unknown> | undefined
  const eventTokens = createEventTokens({ ttlMs: options.eventsTokenTtlMs ?? 300_000, now: options.now ?? Date.now })
  const callbacks = createCallbackLinks(options.callbackSecret, options.callbackTtlSeconds)
  /** A run's open deferrals as the API shows them: each with its callbackUrl when the server has a callback secret. */
  const shownDeferrals = (c: Context, runId: string, pending: readonly PendingDeferral[]): (PendingDeferral & { callbackUrl?: string })[] =>
    callbacks === undefined ? [...pending] : pending.map((deferral) => callbacks.decorate(c, runId, deferral))

  const app = new Hono<Env>()

  // Authentication reads headers only: the body stays unread until the route reads it.
  const guard = (scope: ApiScope) => async (c: Context<Env>, next: () => Promise<void>) => {
    c.set('principal', authorize(keys, c.req.header('authorization'), scope))
    await next()
  }

  /** The events route takes a bearer key with runs:read, or `?token=` from POST /v1/runs/{id}/events-token for that run. */
  const eventsGuard = async (c: Context<Env>, next: () => Promise<void>) => {
    const token = c.req.query('token')
    if (token === undefined) return guard('runs:read')(c, next)
    c.set('principal', eventTokens.verify(token, c.req.param('id') ?? ''))
    await next()
    return undefined
  }

  function refuseWhenShuttingDown(): void {
    if (state.shuttingDown) throw new ApiError('shutting_down', 'The server is shutting down and takes no new runs; try another instance or again after it restarts.')
  }

  function track(handle: RunHandle): void {
    const key = keyOf(handle.runId, handle.executionId)
    state.runs.set(key, handle)
    options.onTrack?.(handle)
    void handle.done
      .catch((error: unknown) => { report(error) })
      .finally(() => {
        state.runs.delete(key)
        state.cancelling.delete(key)
      })
  }

  function liveState(runId: string): LiveState {
    const live = runtime.live(runId)
    return { liveExecutionId: live?.executionId, cancelling: live !== undefined && state.cancelling.has(keyOf(runId, live.executionId)) }
  }

  /** A run as stored, after making the live execution's lines readable. */
  async function load(runId: string): Promise<StoredRun> {
    runtime.live(runId)?.flush()
    return runtime.get(runId)
  }

  /** The deferrals a run waits on; read only while its latest execution has not ended. */
  async function pendingOf(stored: StoredRun): Promise<PendingDeferral[]> {
    return hasEnded(stored.latest) ? [] : runtime.pendingDeferrals(stored.runId)
  }

  /** What a run waits on from outside its calls: its open deferrals, and one more while it sleeps on a timer. */
  async function waitingOnOf(stored: StoredRun): Promise<number> {
    return (await pendingOf(stored)).length + (hasEnded(stored.latest) || stored.view.sleepingUntil === undefined ? 0 : 1)
  }

  async function statusNow(runId: string, executionId: string): Promise<RunStatus> {
    const live = liveState(runId)
    if (live.liveExecutionId === executionId) return live.cancelling ? 'cancelling' : 'running'
    const stored = await load(runId)
    const execution = [...stored.executions, ...stored.replays].find((candidate) => candidate.info.executionId === executionId)
    // An execution queued for a worker (a resume on a PostgreSQL dispatcher) exists once a worker takes it.
    if (execution === undefined) return 'queued'
    return statusOfExecution(execution, liveState(runId), execution === stored.latest ? await waitingOnOf(stored) : 0)
  }

  async function accepted(runId: string, executionId: string): Promise<{ runId: string; executionId: string; status: RunStatus; links: ReturnType<typeof linksOf> }> {
    return { runId, executionId, status: await statusNow(runId, executionId), links: linksOf(runId) }
  }

  app.use('*', requestLogMiddleware(options.onResponse))
  app.use('*', async (c, next) => {
    // Set first, so a response made through the context (c.json, c.html...) carries it as made; setting a header on a
    // finished response makes Hono copy it (and node-server build the whole Response), so that is left to the rest:
    // a Response a route built itself. One written straight to the socket (the event stream) has no headers left to set.
    c.header('Cache-Control', 'no-store')
    await next()
    const headers = c.res.headers
    if (!headers.has('x-hono-already-sent') && !headers.has('cache-control')) c.header('Cache-Control', 'no-store')
  })
  app.use('*', securityMiddleware({ allowedHosts, allowedOrigins }))
  app.use('*', async (c, next) => {
    // No route reads the body of a GET or HEAD; looking at it would make node-server build the whole Request.
    const body = c.req.method === 'GET' || c.req.method === 'HEAD' ? null : c.req.raw.body
    if (body !== null) c.req.raw = new Request(c.req.raw, { body: limitedBody(body, bodyLimitBytes), duplex: 'half' })
    await next()
  })

  app.get('/healthz', (c) => c.json({ ok: true as const }))
  app.get('/readyz', (c) => {
    refuseWhenShuttingDown()
    return c.json({ ready: true as const, activeRuns: state.runs.size, openStreams: state.openStreams })
  })
  app.get('/openapi.json', (c) => {
    openApi ??= openApiDocument()
    return c.json(openApi)
  })

  app.get('/v1/workflows', guard('runs:read'), (c) => {
    const workflows = [...runtime.workflows.values()].map((workflow) => {
      let inputSchema: Record<string, unknown> = {}
      if (workflow.input !== undefined) {
        try {
          inputSchema = z.toJSONSchema(workflow.input, { io: 'input', unrepresentable: 'any' })
        } catch (error) {
          report(error)
        }
      }
      return { name: workflow.name, ...(workflow.description === undefined ? {} : { description: workflow.description }), inputSchema }
    })
    return c.json({ workflows })
  })

  app.post('/v1/workflows/:name/runs', guard('runs:start'), async (c) => {
    refuseWhenShuttingDown()
    const name = nameOf(c)
    if (!runtime.workflows.has(name)) {
      throw new ApiError('not_found', `No workflow "${name}" on this server; GET /v1/workflows lists them (${[...runtime.workflows.keys()].join(', ') || 'none'}).`)
    }
    const body = parse(StartRunBodySchema, await readJson(c, true), 'body')
    // Before the key is hashed or anything is created: deeper JSON would overflow the serializers (MAX_JSON_DEPTH).
    const tooDeep = jsonDepthProblem(body.input, 'body.input')
    if (tooDeep !== undefined) throw new ApiError('invalid_request', `Invalid body: ${tooDeep}.`, { issues: [tooDeep] })
    // Signal-with-start: checked against the workflow's declared signals before anything starts.
    if (body.signal !== undefined) checkStartSignalOf(name, body.signal)
    const key = idempotencyKeyOf(c.req.header('idempotency-key'))
    const runOptions: RuntimeRunOptions = {
      ...(body.signal === undefined ? {} : { startSignal: { name: body.signal.name, payload: body.signal.payload ?? null, from: c.get('principal') } }),
      ...(body.input === undefined ? {} : { input: body.input }),
      ...(body.budgets === undefined ? {} : { budgets: budgetsOf(body.budgets) }),
      ...(body.launchMode === undefined ? {} : { launchMode: body.launchMode }),
      ...(body.allowUnpriced === undefined ? {} : { allowUnpriced: body.allowUnpriced }),
      ...(body.concurrencyKey === undefined ? {} : { concurrencyKey: body.concurrencyKey }),
      ...(body.priority === undefined ? {} : { priority: body.priority }),
    }
    const start = async (runId?: string): Promise<{ runId: string; executionId: string }> => {
      const handle = await runtime.start(name, runId === undefined ? runOptions : { ...runOptions, runId })
      // A run this server executes is waited for at shutdown; one queued for workers runs elsewhere.
      if (runtime.live(handle.runId) !== undefined) track(handle)
      return { runId: handle.runId, executionId: handle.executionId }
    }
    if (key === undefined) {
      const started = await start()
      return c.json(await accepted(started.runId, started.executionId), 202)
    }
    // Claimed synchronously, before anything is awaited: a concurrent request with the key waits for this start.
    const claim = idempotency.claim(`${c.get('principal')}\n${key}`, canonicalJson({ workflow: name, body }), start)
    const started = await claim.outcome
    if (!started.repeat) return c.json(await accepted(started.runId, started.executionId), 202)
    // Started by a request before this one, perhaps in another process that is still creating it.
    if (!(await runtime.store.hasRun(started.runId))) return c.json({ runId: started.runId, executionId: started.executionId, status: 'queued' as const, links: linksOf(started.runId) }, 200)
    return c.json(await accepted(started.runId, started.executionId), 200)
  })

  /** A start's signal: 404 for a name the workflow does not declare (naming those it does), 400 with the issues for a payload failing its schema. */
  function checkStartSignalOf(workflow: string, signal: { readonly name: string; readonly payload?: unknown }): void {
    const tooDeep = jsonDepthProblem(signal.payload, 'body.signal.payload')
    if (tooDeep !== undefined) throw new ApiError('invalid_request', `Invalid body: ${tooDeep}.`, { issues: [tooDeep] })
    const checked = checkSignal(runtime.workflows.get(workflow)?.signals, workflow, signal.name, signal.payload)
    if (checked.ok) return
    if (checked.status === 'invalid') {
      throw new ApiError('invalid_request', `The payload does not fit signal "${signal.name}"'s schema; nothing was started.`, { issues: checked.issues.map((issue) => `body.signal.${issue}`) })
    }
    if (checked.status === 'unknown') throw new ApiError('not_found', `${checked.message} Nothing was started.`)
    throw new ApiError('invalid_request', checked.message)
  }

  app.get('/v1/runs', guard('runs:read'), async (c) => {
    const query = parse(ListRunsQuerySchema, c.req.query(), 'query')
    // Checked here so a bad cursor is the API's 400, in its words.
    if (query.cursor !== undefined) decodeCursor(query.cursor)
    // Rows only: a listing never folds a journal. The server adds what only it knows (a cancel it asked for).
    const rowStatus = rowStatusOf(query.status)
    const page =
      rowStatus === null
        ? { rows: [], nextCursor: undefined }
        : await runtime.list({
            limit: query.limit ?? DEFAULT_PAGE,
            ...(query.workflow === undefined ? {} : { workflow: query.workflow }),
            ...(rowStatus === undefined ? {} : { status: rowStatus }),
            ...(query.cursor === undefined ? {} : { cursor: query.cursor }),
          })
    const runs = page.rows.map((row) => rowListItem(row, liveState(row.runId))).filter((item) => query.status === undefined || item.status === query.status)
    return c.json({ runs, nextCursor: page.nextCursor ?? null })
  })

  app.get('/v1/queues', guard('runs:read'), async (c) => {
    // The in-process limiters of this server's runtime, or the admission tables of PostgreSQL workers.
    const queues = (await runtime.queues?.()) ?? []
    return c.json({ queues: queues.map((queue) => ({ key: queue.key, running: queue.running, waiting: queue.waiting, oldestWaitMs: queue.oldestWaitMs })) })
  })

  /**
   * The served body of a run that ended with no execution of it live here,
   * by the stored run object: the runtime hands out the same object while
   * the run stays as it is (its finished-run cache checks the store for a
   * later execution on every read), so repeated reads of a finished run
   * build and serialise its resource once. Nothing about such a run depends
   * on the request: it waits on no deferral and no server state changes it.
   */
  const endedBodies = new WeakMap<StoredRun, string>()
  const JSON_HEADERS = { 'content-type': 'application/json' }

  app.get('/v1/runs/:id', guard('runs:read'), async (c) => {
    const runId = runIdOf(c)
    // A run this server executes (its root, running or waiting) is answered from the live fold: no store read.
    const held = runtime.held(runId)
    const stored = held ?? (await load(runId))
    const live = liveState(runId)
    const settled = held === undefined && live.liveExecutionId === undefined && hasEnded(stored.latest)
    const kept = settled ? endedBodies.get(stored) : undefined
    if (kept !== undefined) return c.body(kept, 200, JSON_HEADERS)
    const pending = held === undefined ? await pendingOf(stored) : held.view.openDeferrals()
    const resource = runResource(stored, live, shownDeferrals(c, runId, pending))
    const body = JSON.stringify({ ...resource, error: resource.error === null ? null : clientMessage(resource.error) })
    if (settled) endedBodies.set(stored, body)
    return c.body(body, 200, JSON_HEADERS)
  })

  app.get('/v1/runs/:id/result', guard('runs:read'), async (c) => {
    const runId = runIdOf(c)
    const query = parse(ResultQuerySchema, c.req.query(), 'query')
    const deadline = Date.now() + Math.min(query.wait ?? 0, maxWaitSeconds) * 1000
    const signals = [c.req.raw.signal, state.shutdown.signal]
    for (;;) {
      // A run this server executes and that has not ended is answered from its live fold: no store read.
      const held = runtime.live(runId)
      const described = held === undefined ? undefined : await runtime.describe(runId)
      if (held !== undefined && described?.live === true && described.disposition === undefined) {
        const left = deadline - Date.now()
        if (left <= 0 || signals.some((signal) => signal.aborted)) {
          const status = liveState(runId).cancelling ? ('cancelling' as const) : described.status
          return c.json({ runId, executionId: described.executionId, status, links: linksOf(runId) }, 202)
        }
        await Promise.race([held.done.catch(() => undefined), sleep(left, signals)])
        continue
      }
      // Its run_end is written and its execution is finishing (its result file, the run's release): a client that waits
      // gets the result once the run is free, so the request it sends next (a resume, a status) finds it ended, not held.
      if (held !== undefined) await Promise.race([held.done.catch(() => undefined), sleep(Math.max(0, deadline - Date.now()), signals)])
      const stored = await load(runId)
      const result = resultOf(stored.latest)
      if (result !== undefined) return c.json(clientValue(result), 200)
      const left = deadline - Date.now()
      if (left <= 0 || signals.some((signal) => signal.aborted)) {
        return c.json(
          { runId, executionId: stored.latest.info.executionId, status: statusOfExecution(stored.latest, liveState(runId), await waitingOnOf(stored)), links: linksOf(runId) },
          202,
        )
      }
      const live = runtime.live(runId)
      if (live !== undefined && live.executionId === stored.latest.info.executionId) {
        await Promise.race([live.done.catch(() => undefined), sleep(left, signals)])
      } else {
        // Run by another process (or a resume starting): look again shortly.
        await sleep(Math.min(left, POLL_MS), signals)
      }
    }
  })

  app.get('/v1/runs/:id/journal', guard('runs:read'), async (c) => {
    const runId = runIdOf(c)
    const query = parse(JournalQuerySchema, c.req.query(), 'query')
    const ref = pickExecution(runId, await runtime.store.listExecutions(runId), query.execution)
    const live = runtime.live(runId)
    if (live?.executionId === ref.executionId) live.flush()
    // Served without stacks, paths or command-line advice in their errors; the store keeps them whole.
    const lines = clientLines(runtime.store.readLines(ref, { afterSeq: query.after ?? -1, ...(query.limit === undefined ? {} : { limit: query.limit }) })[Symbol.asyncIterator]())
    const encoder = new TextEncoder()
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = await lines.next()
          if (next.done === true) controller.close()
          else controller.enqueue(encoder.encode(`${JSON.stringify(next.value)}\n`))
        } catch (error) {
          report(error)
          controller.error(error)
        }
      },
      async cancel() {
        await lines.return?.()
      },
    })
    return c.body(body, 200, { 'Content-Type': 'application/x-ndjson; charset=utf-8', 'Locus-Execution-Id': ref.executionId })
  })

  app.get('/v1/runs/:id/events', eventsGuard, async (c) => {
    const runId = runIdOf(c)
    const query = parse(EventsQuerySchema, c.req.query(), 'query')
    const lastEventId = c.req.header('last-event-id')
    if (query.follow === 'run') return followRunEvents(c, runId, query, lastEventId)
    const afterSeq = lastEventId === undefined || lastEventId.trim() === '' ? (query.after ?? -1) : parse(z.coerce.number().int().min(-1), lastEventId.trim(), 'Last-Event-ID')
    const infos = await runtime.store.listExecutions(runId)
    const stop = new AbortController()
    // A run queued for workers has no execution yet: the stream waits for its root, whose id is the run id.
    const queued = (query.execution === undefined || query.execution === runId) && !infos.some((info) => info.kind === 'root' || info.kind === 'resume')
    const ref: ExecutionRef = queued ? { runId, executionId: runId } : pickExecution(runId, infos, query.execution)
    const live = runtime.live(runId)
    let lines: AsyncIterator<JournalLine>
    if (queued) {
      lines = afterFirstExecution(runId, afterSeq, stop.signal)
    } else if (live?.executionId === ref.executionId) {
      const outgoing = outgoingOf(c)
      // Under @hono/node-server each line is pushed to the socket from the run's feed as it is written.
      if (outgoing !== undefined) return pushEvents(c, outgoing, live, afterSeq, { 'Locus-Execution-Id': ref.executionId })
      // The live feed registers the subscriber before it reads history, then holds live lines until history is out.
      lines = live.events({ afterSeq })[Symbol.asyncIterator]()
    } else {
      if (afterSeq >= 0 && (await hasEndedBy(ref, afterSeq))) return c.body(null, 204)
      // A stored execution's stream ends at its run_end, or once its end is known elsewhere (a torn run_end).
      lines = endWhenEnded(runtime.store.tail(ref, { afterSeq, signal: stop.signal })[Symbol.asyncIterator](), () => executionEnded(ref))
    }
    return sendEvents(c, { lines, stop, headers: { 'Locus-Execution-Id': ref.executionId } })
  })

  /** The Node response under @hono/node-server, written to directly by event streams; undefined elsewhere (app.request, other runtimes). */
  function outgoingOf(c: Context<Env>): PushSink | undefined {
    return (c.env as { outgoing?: PushSink } | undefined)?.outgoing
  }

  /** The headers of every journal event stream. */
  function eventHeaders(c: Context<Env>, extra: Record<string, string> = {}): Record<string, string> {
    return {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Accel-Buffering': 'no',
      ...extra,
      [REQUEST_ID_HEADER]: c.get('requestId'),
    }
  }

  /** Answers with the pushed event stream of an execution this process runs ({@link pushJournalEvents}), counted among the open streams. */
  function pushEvents(c: Context<Env>, outgoing: PushSink, source: LineSubscription, afterSeq: number, headers: Record<string, string>): Response {
    state.openStreams += 1
    pushJournalEvents(outgoing, eventHeaders(c, headers), {
      source,
      cursor: { afterSeq },
      heartbeatMs,
      retryMs: sseRetryMs,
      maxBufferedBytes: eventBufferBytes,
      signal: state.shutdown.signal,
      onClose: () => {
        state.openStreams -= 1
      },
      onError: report,
    })
    return RESPONSE_ALREADY_SENT
  }

  /** Answers a request with a journal event stream of `lines`, counted among the open streams until it closes (which aborts `stop`). */
  function sendEvents(
    c: Context<Env>,
    events: { readonly lines: AsyncIterator<JournalLine>; readonly stop: AbortController; readonly headers?: Record<string, string>; readonly acrossExecutions?: boolean },
  ): Response {
    state.openStreams += 1
    const streamOptions: JournalEventStreamOptions = {
      lines: clientLines(events.lines),
      heartbeatMs,
      retryMs: sseRetryMs,
      signal: state.shutdown.signal,
      onClose: () => {
        state.openStreams -= 1
        events.stop.abort()
      },
      onError: report,
      ...(events.acrossExecutions === true ? { acrossExecutions: true } : {}),
    }
    const headers = eventHeaders(c, events.headers)
    // Under @hono/node-server, frames go straight to the socket (one write each, no stream reader between); elsewhere
    // (app.request, other runtimes) as a stream body.
    const outgoing = outgoingOf(c)
    if (outgoing !== undefined) {
      writeJournalEvents(outgoing, headers, streamOptions)
      return RESPONSE_ALREADY_SENT
    }
    return c.body(journalEventStream(streamOptions), 200, headers)
  }

  /**
   * `GET /v1/runs/{id}/events?follow=run`: one stream for the whole run. It
   * starts at the root (after `?after=`), or where a `Last-Event-ID` of the
   * form `<executionId>:<seq>` left off, and goes on into each later
   * execution (a resume, a worker's takeover) as it begins, until the
   * `run_end` of the latest one. A client that has that `run_end` gets 204.
   */
  async function followRunEvents(c: Context<Env>, runId: string, query: z.output<typeof EventsQuerySchema>, lastEventId: string | undefined): Promise<Response> {
    if (query.execution !== undefined) {
      throw new ApiError('invalid_request', 'follow=run follows every execution of the run; leave out execution, or leave out follow to read one execution.', { issues: ['query.execution: not with follow=run'] })
    }
    const from = lastEventId === undefined || lastEventId.trim() === '' ? { executionId: runId, afterSeq: query.after ?? -1 } : runEventCursor(lastEventId.trim())
    const infos = await runtime.store.listExecutions(runId)
    const chain = infos.filter((info) => info.kind === 'root' || info.kind === 'resume')
    if (chain.length > 0 && !chain.some((info) => info.executionId === from.executionId)) {
      throw new ApiError('invalid_request', `Last-Event-ID names execution "${from.executionId}", which run "${runId}" does not have; it has ${chain.map((info) => info.executionId).join(', ')}.`, {
        issues: ['Last-Event-ID: unknown execution'],
      })
    }
    // Everything sent already: the named execution is the latest and ended at the cursor.
    if (from.afterSeq >= 0 && chain.at(-1)?.executionId === from.executionId && (await hasEndedBy({ runId, executionId: from.executionId }, from.afterSeq))) return c.body(null, 204)
    const stop = new AbortController()
    return sendEvents(c, { lines: acrossExecutions(runId, from, stop.signal), stop, acrossExecutions: true })
  }

  /**
   * The lines of every execution of a run in order, from `from` on: each
   * execution as this process holds it live or as the store's tail has it,
   * then the next one once it begins. Ends after a `run_end` with no later
   * execution, or when `signal` or the server's shutdown comes first; an
   * execution that stopped without `run_end` (suspended, or its worker lost)
   * is followed by waiting for the one that continues it.
   */
  async function* acrossExecutions(runId: string, from: { readonly executionId: string; readonly afterSeq: number }, signal: AbortSignal): AsyncGenerator<JournalLine> {
    const signals = [signal, state.shutdown.signal]
    const stopped = (): boolean => signals.some((candidate) => candidate.aborted)
    let current = from.executionId
    let afterSeq = from.afterSeq
    while (!stopped()) {
      const ref: ExecutionRef = { runId, executionId: current }
      const live = runtime.live(runId)
      const exists = live?.executionId === current || (await runtime.store.listExecutions(runId)).some((info) => info.executionId === current)
      let ended = false
      if (exists) {
        const lines =
          live?.executionId === current
            ? live.events({ afterSeq })[Symbol.asyncIterator]()
            : endWhenEnded(runtime.store.tail(ref, { afterSeq, signal })[Symbol.asyncIterator](), () => executionEnded(ref))
        try {
          while (!ended) {
            const next = await lines.next()
            if (next.done === true) break
            afterSeq = next.value.seq
            ended = next.value.type === 'run_end'
            yield next.value
          }
        } finally {
          await lines.return?.()
        }
        // Stopped without run_end (suspended, or taken over): whatever it committed is final now; a tail that ended on
        // the news of a later execution may not have polled for the last of it yet.
        if (!ended && !stopped()) {
          for await (const line of runtime.store.readLines(ref, { afterSeq })) {
            afterSeq = line.seq
            ended = line.type === 'run_end'
            yield line
          }
        }
      }
      const next = await nextExecution(runId, current, { read: exists, ended }, signals)
      if (next === undefined) return
      current = next
      afterSeq = -1
    }
  }

  /**
   * The execution to read next: `current` itself once it exists when it was
   * not there to read (a queued run's root), else the one that continues it
   * (the next resume), waited for while `current` stopped without ending the
   * run; undefined once the run ended there, or the stream closed.
   */
  async function nextExecution(runId: string, current: string, was: { readonly read: boolean; readonly ended: boolean }, signals: readonly AbortSignal[]): Promise<string | undefined> {
    const { ended } = was
    for (;;) {
      const chain = (await runtime.store.listExecutions(runId)).filter((info) => info.kind === 'root' || info.kind === 'resume')
      const at = chain.findIndex((info) => info.executionId === current)
      if (at >= 0 && !was.read) return current
      if (at < 0) {
        // Not created yet (a queued run's root): wait for it.
        if (signals.some((candidate) => candidate.aborted)) return undefined
        await sleep(POLL_MS, signals)
        continue
      }
      const after = chain[at + 1]
      if (after !== undefined) return after.executionId
      if (ended || signals.some((candidate) => candidate.aborted)) return undefined
      await sleep(POLL_MS, signals)
    }
  }

  /**
   * The lines of a queued run's root execution from `afterSeq` on, once a
   * worker created it: until then it looks every POLL_MS, and ends with
   * nothing when `signal` (the stream's close) or the server's shutdown comes
   * first.
   */
  async function* afterFirstExecution(runId: string, afterSeq: number, signal: AbortSignal): AsyncGenerator<JournalLine> {
    const signals = [signal, state.shutdown.signal]
    let root: ExecutionInfo | undefined
    for (;;) {
      root = (await runtime.store.listExecutions(runId)).find((info) => info.kind === 'root')
      if (root !== undefined || signals.some((candidate) => candidate.aborted)) break
      await sleep(POLL_MS, signals)
    }
    if (root === undefined) return
    const ref = root
    const lines = endWhenEnded(runtime.store.tail(ref, { afterSeq, signal })[Symbol.asyncIterator](), () => executionEnded(ref))
    try {
      for (;;) {
        const next = await lines.next()
        if (next.done === true) return
        yield next.value
      }
    } finally {
      await lines.return?.()
    }
  }

  /** True when a stored execution ended, whatever its journal says: its result.json was written, or a later execution of the run began. */
  async function executionEnded(ref: ExecutionRef): Promise<boolean> {
    if ((await runtime.store.readArtifact(ref, ARTIFACT_KEYS.result)) !== undefined) return true
    const executions = (await runtime.store.listExecutions(ref.runId)).filter((candidate) => candidate.kind === 'root' || candidate.kind === 'resume')
    const at = executions.findIndex((candidate) => candidate.executionId === ref.executionId)
    return at >= 0 && at < executions.length - 1
  }

  /** True when the stored execution ended at or before `afterSeq`: the client has everything, so it gets 204 and stops reconnecting. */
  async function hasEndedBy(ref: ExecutionRef, afterSeq: number): Promise<boolean> {
    for await (const line of runtime.store.readLines(ref, { afterSeq: afterSeq - 1, limit: 1 })) {
      return line.seq === afterSeq && line.type === 'run_end'
    }
    // Nothing at the cursor: past the end of an ended execution, or not written yet.
    return (await runtime.store.readArtifact(ref, ARTIFACT_KEYS.result)) !== undefined
  }

  app.post('/v1/runs/:id/cancel', guard('runs:cancel'), async (c) => {
    const runId = runIdOf(c)
    const body = parse(CancelBodySchema, await readJson(c, false), 'body')
    const live = runtime.live(runId)
    // Journaled as run_cancel_requested, by the key's name (never its secret) or `anonymous`.
    const by = c.get('principal')
    if (live !== undefined && runtime.cancel(runId, body.reason ?? 'cancelled over HTTP', by)) {
      const key = keyOf(runId, live.executionId)
      if (!state.cancelling.has(key)) {
        state.cancelling.add(key)
        void live.done.catch(() => undefined).finally(() => state.cancelling.delete(key))
      }
      return c.json({ runId, executionId: live.executionId, status: 'cancelling' as const, links: linksOf(runId) }, 202)
    }
    const stored = await load(runId)
    const status = statusOfExecution(stored.latest, liveState(runId))
    if (TERMINAL_STATUSES.has(status)) {
      throw new ApiError('run_terminal', `Run "${runId}" has ended (${status}); there is nothing to cancel.`)
    }
    // Runs that execute on workers (a PostgreSQL dispatcher): the request reaches the worker that holds the run.
    if (runtime.requestCancel !== undefined && (await runtime.requestCancel(runId, body.reason ?? 'cancelled over HTTP', by))) {
      return c.json({ runId, executionId: stored.latest.info.executionId, status: 'cancelling' as const, links: linksOf(runId) }, 202)
    }
    throw new ApiError(
      'run_owned',
      `Run "${runId}" is not executing in this server, so it cannot cancel it: cancel it in the process that runs it. If that process died, the run is interrupted; POST ${linksOf(runId).resume} continues it.`,
    )
  })

  app.post('/v1/runs/:id/resume', guard('runs:start'), async (c) => {
    refuseWhenShuttingDown()
    const runId = runIdOf(c)
    const body = parse(ResumeBodySchema, await readJson(c, false), 'body')
    await load(runId)
    const live = runtime.live(runId)
    if (live !== undefined) {
      throw new ApiError('run_owned', `Run "${runId}" is executing in this server (execution ${live.executionId}); wait for it to end or cancel it first.`)
    }
    const handle = await runtime.resume(runId, {
      ...(body.budgets === undefined ? {} : { budgets: budgetsOf(body.budgets) }),
      ...(body.launchMode === undefined ? {} : { launchMode: body.launchMode }),
    })
    if (runtime.live(handle.runId) !== undefined) track(handle)
    return c.json(await accepted(handle.runId, handle.executionId), 202)
  })

  app.get('/v1/runs/:id/deferred', guard('runs:read'), async (c) => {
    const runId = runIdOf(c)
    await load(runId)
    return c.json({ runId, deferred: shownDeferrals(c, runId, await runtime.pendingDeferrals(runId)) })
  })

  /** One answer to a deferral, with the rules of deferred tools: invalid leaves it open, a different second answer conflicts, the same one is a no-op. */
  async function answer(c: Context, answerOf: DeferredAnswer): Promise<Response> {
    const runId = runIdOf(c)
    await load(runId)
    const deferredId = c.req.param('deferredId') ?? ''
    return answerResponse(c, runId, deferredId, await runtime.answerDeferred(runId, deferredId, answerOf))
  }

  // The deferral's deferred_settled names the key that answered (decidedBy) and the surface (via).
  app.post('/v1/runs/:id/deferred/:deferredId/resolve', guard('deferred:resolve'), async (c) => {
    const body = parse(ResolveBodySchema, await readJson(c, true), 'body')
    return answer(c, { kind: 'resolved', result: JSON.parse(JSON.stringify(body.result ?? null)) as never, decidedBy: c.get('principal'), via: body.via ?? 'api' })
  })

  app.post('/v1/runs/:id/deferred/:deferredId/reject', guard('deferred:resolve'), async (c) => {
    const body = parse(RejectBodySchema, await readJson(c, true), 'body')
    return answer(c, {
      kind: 'rejected',
      error: body.error,
      retryable: body.retryable === true,
      ...(body.code === undefined ? {} : { code: body.code }),
      decidedBy: c.get('principal'),
      via: body.via ?? 'api',
    })
  })

  app.post('/v1/runs/:id/signals/:name', guard('deferred:resolve'), async (c) => {
    const runId = runIdOf(c)
    await load(runId)
    const name = c.req.param('name') ?? ''
    const body = parse(SignalBodySchema, await readJson(c, true), 'body')
    const outcome = await runtime.signal(runId, name, JSON.parse(JSON.stringify(body.payload ?? null)) as unknown, { from: c.get('principal'), via: 'api' })
    if (outcome.ok) return c.json({ runId, name, signalSeq: outcome.signalSeq, status: outcome.status }, 202)
    if (outcome.status === 'invalid') throw new ApiError('invalid_request', `The payload does not fit signal "${name}"'s schema; nothing was sent.`, { issues: outcome.issues })
    if (outcome.status === 'finished') throw new ApiError('run_terminal', outcome.message)
    throw new ApiError('not_found', outcome.message)
  })

  app.post('/v1/runs/:id/updates/:name', guard('deferred:resolve'), async (c) => {
    const runId = runIdOf(c)
    await load(runId)
    const name = c.req.param('name') ?? ''
    const query = parse(UpdateQuerySchema, c.req.query(), 'query')
    const body = parse(UpdateBodySchema, await readJson(c, true), 'body')
    const waitMs = Math.min(query.wait ?? 30, maxWaitSeconds) * 1000
    const outcome = await runtime.update(runId, name, JSON.parse(JSON.stringify(body.input ?? null)) as unknown, { from: c.get('principal'), via: 'api' }, { waitMs, signal: AbortSignal.any([c.req.raw.signal, state.shutdown.signal]) })
    if (outcome.status === 'completed') return c.json({ runId, name, updateId: outcome.updateId, result: outcome.result }, 200)
    if (outcome.status === 'accepted') return c.json({ runId, name, updateId: outcome.updateId, status: outcome.status }, 202)
    if (outcome.status === 'invalid' || outcome.status === 'rejected') {
      const why = outcome.status === 'invalid' ? `The input does not fit update "${name}"'s schema` : `Update "${name}" was rejected by its validator`
      throw new ApiError('invalid_request', `${why}; nothing was journaled (audit record ${outcome.updateId}).`, { issues: outcome.issues })
    }
    if (outcome.status === 'failed') throw new ApiError('unprocessable', `Update "${name}" (${outcome.updateId}) failed: ${outcome.error}`)
    if (outcome.status === 'finished') throw new ApiError('run_terminal', outcome.message)
    throw new ApiError('not_found', outcome.message)
  })

  app.get('/v1/runs/:id/queries/:name', guard('runs:read'), async (c) => {
    const runId = runIdOf(c)
    await load(runId)
    const name = c.req.param('name') ?? ''
    const outcome = await runtime.query(runId, name)
    if (!outcome.ok) throw new ApiError('not_found', outcome.message)
    return c.json({ runId, name, result: outcome.result })
  })

  const routes: RouteContext = { app, runtime, state, guard, parse, readJson, load, track, report, refuseWhenShuttingDown, liveState, options, eventTokens, callbacks }
  for (const mount of ROUTE_MODULES) mount(routes)

  app.notFound((c) => {
    const error = new ApiError('not_found', `No route ${c.req.method} ${c.req.path}; GET /openapi.json lists the routes.`)
    c.set('errorDetail', { code: error.code, detail: error.message })
    return c.json(error.body(c.get('requestId')), 404)
  })

  app.onError((error, c) => {
    const context: ErrorContext = { requestId: c.get('requestId'), method: c.req.method, path: c.req.path }
    const api = toApiError(error, (fault) => {
      report(fault, context)
    })
    const cause = api.cause ?? error
    c.set('errorDetail', { code: api.code, detail: cause instanceof Error ? cause.message : api.message })
    return c.json(api.body(c.get('requestId')), api.status as 400, api.headers)
  })

  return { app, state, track }
}

/** Budgets as the runtime takes them: parsed by {@link BudgetsSchema}, with absent fields dropped rather than undefined. */
function budgetsOf(value: z.infer<typeof BudgetsSchema>): RunBudgets {
  return JSON.parse(JSON.stringify(value)) as RunBudgets
}

/**
 * The Locus HTTP API as a Hono app on a runtime: every route parses its
 * request with zod, calls the runtime, and answers; errors are always
 * `{ "error": { "code", "message", "issues"? } }`. Serve it with
 * {@link startServer} (which adds graceful shutdown and the loopback rule),
 * or mount `app.fetch` in any Hono-compatible server.
 *
 * @example
 * ```ts
 * const app = createServer({ runtime: createRuntime({ workflows: [triage], host }) })
 * const response = await app.request('/v1/workflows')
 * ```
 */
export function createServer(options: CreateServerOptions): Hono<Env> {
  return buildServer(options).app
}
