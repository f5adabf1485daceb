import type { JournalLine } from '@locus/journal'
import { LocusApiError, apiErrorOf } from './api-error.js'
import { type EventsOptions, type Sleep, journalEvents, sleepFor } from './journal-events.js'
import { type TokenStreamOptions, type TokenStreamRecord, type UiStreamChunk, tokenStream } from './token-stream.js'
import type {
  DeferredAnswerAccepted,
  QueryResult,
  SignalAccepted,
  UpdateAccepted,
  UpdateResult,
  EventsToken,
  LaunchMode,
  PendingDeferral,
  Readiness,
  ResultAnswer,
  RunAccepted,
  RunBudgets,
  QueueInfo,
  ScheduleDetail,
  ScheduleInfo,
  ScheduleListItem,
  SlotsRequested,
  RunInfo,
  RunList,
  RunResult,
  RunStatus,
  WorkerAction,
  WorkerActionsReport,
  WorkerTriggers,
  WorkflowInfo,
} from './types.js'

/** Options of {@link createLocusClient}. */
export interface LocusClientOptions {
  /** The server's URL, e.g. `http://127.0.0.1:4477`; a path prefix is kept. */
  readonly baseUrl: string
  /** Sent as `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string | undefined
  /** The fetch to use (a proxy agent, a test double). @default globalThis.fetch */
  readonly fetch?: typeof fetch | undefined
  /** How {@link LocusClient.events} and {@link LocusClient.stream} wait before reconnecting; inject one in tests. @default a timer */
  readonly sleep?: Sleep | undefined
}

export interface StartRunOptions {
  /** The workflow's input; the server validates it against the workflow's schema. */
  readonly input?: unknown
  readonly budgets?: RunBudgets
  readonly launchMode?: LaunchMode
  /** With `budgets.maxCostUsd`: start although a model has no price (its requests reserve nothing). */
  readonly allowUnpriced?: boolean
  /** The same key and body again answer the same run instead of starting another. */
  readonly idempotencyKey?: string
  /**
   * Signal-with-start: a signal the workflow declares, checked before the run
   * starts (an undeclared name or a bad payload starts nothing) and journaled
   * as the run's first signal, so `waitForSignal(name)` returns it at once.
   */
  readonly signal?: { readonly name: string; readonly payload?: unknown }
}

/** A started run; `created` is false when an `Idempotency-Key` matched an earlier start. */
export type StartedRun = RunAccepted & { readonly created: boolean }

export interface ListRunsOptions {
  readonly workflow?: string
  readonly status?: RunStatus
  /** `nextCursor` of the previous page. */
  readonly cursor?: string
  /** Runs per page, 1 to 100. @default 20 */
  readonly limit?: number
}

export interface JournalOptions {
  /** Only lines whose `seq` is greater. */
  readonly after?: number
  readonly limit?: number
  /** Which execution (`resume-001`, ...). @default the latest */
  readonly execution?: string
}

export interface RejectOptions {
  readonly error: string
  /** Terminal unless true. */
  readonly retryable?: boolean
  readonly code?: 'provider_error' | 'rate_limited' | 'refused' | 'budget_exceeded' | 'deadline_exceeded'
  /** The surface the answer is relayed from, journaled as the settlement's `via` (its `decidedBy` is the key's name). @default 'api' */
  readonly via?: 'api' | 'cli'
}

/** Options of {@link LocusClient.resolveDeferred}. */
export interface ResolveOptions {
  /** The surface the answer is relayed from, journaled as the settlement's `via` (its `decidedBy` is the key's name). @default 'api' */
  readonly via?: 'api' | 'cli'
}

export interface WorkerPollOptions {
  /** Names this worker process; use the same name on every poll and answer. */
  readonly worker: string
  readonly tools: readonly string[]
  /** Seconds to wait for a trigger. @default 0 */
  readonly wait?: number
  readonly max?: number
  readonly signal?: AbortSignal
}

/** A typed client for every route of the Locus HTTP API. Errors are {@link LocusApiError}s. */
export interface LocusClient {
  readonly baseUrl: string
  listWorkflows(): Promise<readonly WorkflowInfo[]>
  startRun(workflow: string, options?: StartRunOptions): Promise<StartedRun>
  listRuns(options?: ListRunsOptions): Promise<RunList>
  getRun(runId: string): Promise<RunInfo>
  /** Per concurrency key and shared rate limit: runs running and waiting, and the oldest wait (`GET /v1/queues`). */
  listQueues(): Promise<readonly QueueInfo[]>
  /** The result once the run ended; waits up to `wait` seconds (the server caps it, 60 by default). */
  getResult(runId: string, options?: { readonly wait?: number; readonly signal?: AbortSignal }): Promise<ResultAnswer>
  /** Asks for the result until the run ends (each request waits up to `waitSeconds`, default 30). */
  waitForResult(runId: string, options?: { readonly waitSeconds?: number; readonly signal?: AbortSignal }): Promise<RunResult>
  journal(runId: string, options?: JournalOptions): Promise<JournalLine[]>
  /** The run's journal lines as they are written: each once, in `seq` order, across reconnects; ends after `run_end`. */
  events(runId: string, options?: EventsOptions): AsyncIterable<JournalLine>
  /**
   * The run's model tokens as they stream, across its executions (`GET
   * /v1/runs/{id}/stream`): each record once, in offset order, across
   * reconnects; requests whose text was thrown away end with a `discarded`
   * record. Ends once the run ended and everything was sent.
   */
  stream(runId: string, options?: TokenStreamOptions & { readonly format?: 'raw' }): AsyncIterable<TokenStreamRecord>
  /** With `format: 'ui'`: the AI SDK UI message stream's chunks instead of records. */
  stream(runId: string, options: TokenStreamOptions & { readonly format: 'ui' }): AsyncIterable<UiStreamChunk>
  cancel(runId: string, options?: { readonly reason?: string }): Promise<RunAccepted>
  resume(runId: string, options?: { readonly budgets?: RunBudgets; readonly launchMode?: LaunchMode }): Promise<RunAccepted>
  listDeferred(runId: string): Promise<readonly PendingDeferral[]>
  resolveDeferred(runId: string, deferredId: string, result: unknown, options?: ResolveOptions): Promise<DeferredAnswerAccepted>
  rejectDeferred(runId: string, deferredId: string, options: RejectOptions): Promise<DeferredAnswerAccepted>
  /** Sends signal `name` (declared by the run's workflow) with `payload`: `POST /v1/runs/{id}/signals/{name}`, answered 202 once kept. */
  signal(runId: string, name: string, payload: unknown): Promise<SignalAccepted>
  /**
   * Sends update `name` (declared by the run's workflow) with `input` and
   * waits for its handler: `POST /v1/runs/{id}/updates/{name}?wait=`. The
   * handler's result (200), or `status: 'accepted'` with the `updateId` when
   * `wait` seconds (default the server's 30) ran out first. A rejected input
   * throws `invalid_request` with the issues, a failed handler `unprocessable`.
   */
  update(runId: string, name: string, input: unknown, options?: { readonly wait?: number; readonly signal?: AbortSignal }): Promise<UpdateResult | UpdateAccepted>
  /** Answers query `name` of a run from its journal: `GET /v1/runs/{id}/queries/{name}`. */
  query(runId: string, name: string): Promise<QueryResult>
  eventsToken(runId: string): Promise<EventsToken>
  /** The store's schedules, each with its latest slot record (`GET /v1/schedules`). */
  listSchedules(): Promise<readonly ScheduleListItem[]>
  /** One schedule and its slot records, newest first (`GET /v1/schedules/{id}`). */
  getSchedule(scheduleId: string): Promise<ScheduleDetail>
  /** Pauses a schedule: its slots are recorded `paused` until it is unpaused (`POST /v1/schedules/{id}/pause`). */
  pauseSchedule(scheduleId: string): Promise<ScheduleInfo>
  unpauseSchedule(scheduleId: string): Promise<ScheduleInfo>
  /** Asks for a slot now, fired by the process that holds the schedule on its next tick (`POST /v1/schedules/{id}/trigger`). */
  triggerSchedule(scheduleId: string): Promise<SlotsRequested>
  /** Asks for every slot from `from` to `to`, both included (`POST /v1/schedules/{id}/backfill`); the server refuses a range of too many slots. */
  backfillSchedule(scheduleId: string, range: { readonly from: string; readonly to: string }): Promise<SlotsRequested>
  pollTriggers(options: WorkerPollOptions): Promise<WorkerTriggers>
  sendActions(worker: string, actions: readonly WorkerAction[]): Promise<WorkerActionsReport>
  health(): Promise<{ readonly ok: true }>
  ready(): Promise<Readiness>
  openApi(): Promise<Record<string, unknown>>
}

type Query = Record<string, string | number | undefined>

interface RequestSpec {
  readonly method: 'GET' | 'POST'
  readonly path: string
  readonly query?: Query
  readonly body?: unknown
  readonly headers?: Record<string, string>
  readonly signal?: AbortSignal | undefined
}

const segment = (value: string): string => encodeURIComponent(value)

/**
 * A client for a Locus server. Each method is one request; `events` is an
 * async iterator that reconnects with `Last-Event-ID` and loses nothing.
 *
 * @example
 * ```ts
 * const locus = createLocusClient({ baseUrl: 'http://127.0.0.1:4477', apiKey: process.env.LOCUS_KEY })
 * const run = await locus.startRun('triage', { input: { ticket: 'T-1' } })
 * for await (const line of locus.events(run.runId)) console.log(line.seq, line.type)
 * ```
 */
export function createLocusClient(options: LocusClientOptions): LocusClient {
  let base: URL
  try {
    base = new URL(options.baseUrl)
  } catch {
    throw new TypeError(`baseUrl ${JSON.stringify(options.baseUrl)} is not a URL; pass the server's address, e.g. http://127.0.0.1:4477.`)
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new TypeError(`baseUrl ${JSON.stringify(options.baseUrl)} must be http: or https:, not ${base.protocol}`)
  }
  const baseUrl = base.href.replace(/\/+$/, '')
  const fetchImpl = options.fetch ?? globalThis.fetch
  const authorization: Record<string, string> = options.apiKey === undefined || options.apiKey === '' ? {} : { authorization: `Bearer ${options.apiKey}` }

  const urlOf = (path: string, query: Query = {}): string => {
    const params = new URLSearchParams()
    for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value))
    const search = params.toString()
    return `${baseUrl}${path}${search.length > 0 ? `?${search}` : ''}`
  }

  async function send(spec: RequestSpec): Promise<Response> {
    const request = `${spec.method} ${spec.path}`
    const headers: Record<string, string> = { ...authorization, ...spec.headers }
    if (spec.body !== undefined) headers['content-type'] = 'application/json'
    let response: Response
    try {
      response = await fetchImpl(urlOf(spec.path, spec.query), {
        method: spec.method,
        headers,
        ...(spec.body === undefined ? {} : { body: JSON.stringify(spec.body) }),
        ...(spec.signal === undefined ? {} : { signal: spec.signal }),
      })
    } catch (error) {
      if (spec.signal?.aborted === true) throw error
      throw new LocusApiError(`Could not reach the Locus server at ${baseUrl} (${request}): ${describe(error)}; check the URL and that the server is running.`, {
        code: 'unreachable',
        status: 0,
        request,
        cause: error,
      })
    }
    if (!response.ok) throw await apiErrorOf(response, request)
    return response
  }

  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the body the route answers
  async function json<T>(spec: RequestSpec): Promise<{ status: number; body: T }> {
    const response = await send(spec)
    const text = await response.text()
    try {
      return { status: response.status, body: JSON.parse(text) as T }
    } catch (error) {
      throw new LocusApiError(`${spec.method} ${spec.path} answered ${response.status} with a body that is not JSON; is ${baseUrl} a Locus server?`, {
        code: 'unexpected_response',
        status: response.status,
        request: `${spec.method} ${spec.path}`,
        cause: error,
      })
    }
  }

  const body = async <T>(spec: RequestSpec): Promise<T> => (await json<T>(spec)).body
  const runPath = (runId: string): string => `/v1/runs/${segment(runId)}`
  const schedulePath = (scheduleId: string): string => `/v1/schedules/${segment(scheduleId)}`

  const client: LocusClient = {
    baseUrl,
    async listWorkflows() {
      return (await body<{ workflows: WorkflowInfo[] }>({ method: 'GET', path: '/v1/workflows' })).workflows
    },
    async startRun(workflow, start = {}) {
      const { idempotencyKey, ...rest } = start
      const answer = await json<RunAccepted>({
        method: 'POST',
        path: `/v1/workflows/${segment(workflow)}/runs`,
        body: rest,
        ...(idempotencyKey === undefined ? {} : { headers: { 'idempotency-key': idempotencyKey } }),
      })
      return { ...answer.body, created: answer.status === 202 }
    },
    listRuns(list = {}) {
      return body<RunList>({ method: 'GET', path: '/v1/runs', query: { ...list } })
    },
    getRun(runId) {
      return body<RunInfo>({ method: 'GET', path: runPath(runId) })
    },
    async listQueues() {
      return (await body<{ queues: QueueInfo[] }>({ method: 'GET', path: '/v1/queues' })).queues
    },
    async getResult(runId, result = {}) {
      const answer = await json<RunResult | RunAccepted>({ method: 'GET', path: `${runPath(runId)}/result`, query: { wait: result.wait }, signal: result.signal })
      return answer.status === 200 ? { ended: true, result: answer.body as RunResult } : { ended: false, pending: answer.body as RunAccepted }
    },
    async waitForResult(runId, wait = {}) {
      for (;;) {
        const answer = await client.getResult(runId, { wait: wait.waitSeconds ?? 30, ...(wait.signal === undefined ? {} : { signal: wait.signal }) })
        if (answer.ended) return answer.result
      }
    },
    async journal(runId, journal = {}) {
      const response = await send({ method: 'GET', path: `${runPath(runId)}/journal`, query: { ...journal } })
      const text = await response.text()
      return text
        .split('\n')
        .filter((line) => line.length > 0)
        .map((line) => JSON.parse(line) as JournalLine)
    },
    events(runId, events = {}) {
      return journalEvents({
        runId,
        open: (path, headers, query, signal) => send({ method: 'GET', path, headers: { accept: 'text/event-stream', ...headers }, query, signal }),
        path: `${runPath(runId)}/events`,
        sleep: events.sleep ?? options.sleep ?? sleepFor,
        ...events,
      })
    },
    stream(runId: string, stream: TokenStreamOptions = {}) {
      return tokenStream({
        runId,
        open: (path, headers, query, signal) => send({ method: 'GET', path, headers: { accept: 'text/event-stream', ...headers }, query, signal }),
        path: `${runPath(runId)}/stream`,
        sleep: stream.sleep ?? options.sleep ?? sleepFor,
        ...stream,
      }) as AsyncIterable<TokenStreamRecord> & AsyncIterable<UiStreamChunk>
    },
    cancel(runId, cancel = {}) {
      return body<RunAccepted>({ method: 'POST', path: `${runPath(runId)}/cancel`, body: cancel })
    },
    resume(runId, resume = {}) {
      return body<RunAccepted>({ method: 'POST', path: `${runPath(runId)}/resume`, body: resume })
    },
    async listDeferred(runId) {
      return (await body<{ deferred: PendingDeferral[] }>({ method: 'GET', path: `${runPath(runId)}/deferred` })).deferred
    },
    resolveDeferred(runId, deferredId, result, options = {}) {
      return body<DeferredAnswerAccepted>({ method: 'POST', path: `${runPath(runId)}/deferred/${segment(deferredId)}/resolve`, body: { result, ...(options.via === undefined ? {} : { via: options.via }) } })
    },
    rejectDeferred(runId, deferredId, reject) {
      return body<DeferredAnswerAccepted>({ method: 'POST', path: `${runPath(runId)}/deferred/${segment(deferredId)}/reject`, body: reject })
    },
    signal(runId, name, payload) {
      return body<SignalAccepted>({ method: 'POST', path: `${runPath(runId)}/signals/${segment(name)}`, body: { payload } })
    },
    update(runId, name, input, options = {}) {
      return body<UpdateResult | UpdateAccepted>({ method: 'POST', path: `${runPath(runId)}/updates/${segment(name)}`, query: { wait: options.wait }, body: { input }, signal: options.signal })
    },
    query(runId, name) {
      return body<QueryResult>({ method: 'GET', path: `${runPath(runId)}/queries/${segment(name)}` })
    },
    eventsToken(runId) {
      return body<EventsToken>({ method: 'POST', path: `${runPath(runId)}/events-token` })
    },
    async listSchedules() {
      return (await body<{ schedules: ScheduleListItem[] }>({ method: 'GET', path: '/v1/schedules' })).schedules
    },
    getSchedule(scheduleId) {
      return body<ScheduleDetail>({ method: 'GET', path: schedulePath(scheduleId) })
    },
    pauseSchedule(scheduleId) {
      return body<ScheduleInfo>({ method: 'POST', path: `${schedulePath(scheduleId)}/pause` })
    },
    unpauseSchedule(scheduleId) {
      return body<ScheduleInfo>({ method: 'POST', path: `${schedulePath(scheduleId)}/unpause` })
    },
    triggerSchedule(scheduleId) {
      return body<SlotsRequested>({ method: 'POST', path: `${schedulePath(scheduleId)}/trigger` })
    },
    backfillSchedule(scheduleId, range) {
      return body<SlotsRequested>({ method: 'POST', path: `${schedulePath(scheduleId)}/backfill`, body: { from: range.from, to: range.to } })
    },
    pollTriggers(poll) {
      return body<WorkerTriggers>({
        method: 'GET',
        path: '/v1/worker/triggers',
        query: { worker: poll.worker, tools: poll.tools.join(','), wait: poll.wait, max: poll.max },
        signal: poll.signal,
      })
    },
    sendActions(worker, actions) {
      return body<WorkerActionsReport>({ method: 'POST', path: '/v1/worker/actions', query: { worker }, body: { actions } })
    },
    health() {
      return body<{ ok: true }>({ method: 'GET', path: '/healthz' })
    },
    ready() {
      return body<Readiness>({ method: 'GET', path: '/readyz' })
    },
    openApi() {
      return body<Record<string, unknown>>({ method: 'GET', path: '/openapi.json' })
    },
  }
  return client
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause
  if (typeof cause?.code === 'string') return `${cause.code}${typeof cause.message === 'string' ? ` (${cause.message})` : ''}`
  return error instanceof Error ? error.message : String(error)
}
