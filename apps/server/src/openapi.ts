import { journalLineJsonSchema } from '@locus/journal'
import { z } from 'zod'
import { API_SCOPES, type ApiScope } from './auth.js'
import { API_CODE_OF_KIND, API_CODE_OVERRIDES, type ServerErrorCode, STATUS_OF_CODE } from './errors.js'
import {
  CancelBodySchema,
  DeployCheckBodySchema,
  DeployCheckReportSchema,
  DeferredAnswerResultSchema,
  DeferredListSchema,
  CallbackBodySchema,
  RejectBodySchema,
  ResolveBodySchema,
  SignalBodySchema,
  SignalAcceptedSchema,
  UpdateBodySchema,
  UpdateQuerySchema,
  UpdateResultSchema,
  UpdateAcceptedSchema,
  QueryResultSchema,
  ErrorBodySchema,
  EventsQuerySchema,
  EventsTokenQuerySchema,
  EventsTokenSchema,
  TokenStreamQuerySchema,
  TokenStreamRecordSchema,
  HealthSchema,
  JournalQuerySchema,
  ListRunsQuerySchema,
  ReadySchema,
  ResultQuerySchema,
  ResumeBodySchema,
  RunAcceptedSchema,
  RunIdSchema,
  RunListSchema,
  ScheduleListSchema,
  ScheduleItemSchema,
  SlotsRequestedSchema,
  BackfillBodySchema,
  ScheduleSchema,
  QueueListSchema,
  RunPendingSchema,
  RunResultResponseSchema,
  RunSchema,
  StartRunBodySchema,
  WorkerActionsQuerySchema,
  WorkerActionsReportSchema,
  WorkerResponseSchema,
  WorkerTriggersQuerySchema,
  WorkerTriggersSchema,
  WorkflowListSchema,
} from './schemas.js'

type JsonObject = Record<string, unknown>

/** The schemas /openapi.json names under `components.schemas`. */
const COMPONENTS: Readonly<Record<string, z.ZodType>> = {
  Error: ErrorBodySchema,
  StartRunBody: StartRunBodySchema,
  ResumeBody: ResumeBodySchema,
  CancelBody: CancelBodySchema,
  ResolveBody: ResolveBodySchema,
  SignalBody: SignalBodySchema,
  SignalAccepted: SignalAcceptedSchema,
  UpdateBody: UpdateBodySchema,
  UpdateResult: UpdateResultSchema,
  UpdateAccepted: UpdateAcceptedSchema,
  QueryResult: QueryResultSchema,
  RejectBody: RejectBodySchema,
  CallbackBody: CallbackBodySchema,
  RunAccepted: RunAcceptedSchema,
  WorkflowList: WorkflowListSchema,
  Run: RunSchema,
  RunList: RunListSchema,
  ScheduleList: ScheduleListSchema,
  QueueList: QueueListSchema,
  Schedule: ScheduleSchema,
  ScheduleState: ScheduleItemSchema,
  SlotsRequested: SlotsRequestedSchema,
  BackfillBody: BackfillBodySchema,
  RunResult: RunResultResponseSchema,
  RunPending: RunPendingSchema,
  Health: HealthSchema,
  Ready: ReadySchema,
  EventsToken: EventsTokenSchema,
  TokenStreamRecord: TokenStreamRecordSchema,
  WorkerTriggers: WorkerTriggersSchema,
  WorkerResponse: WorkerResponseSchema,
  WorkerActionsReport: WorkerActionsReportSchema,
  DeployCheckBody: DeployCheckBodySchema,
  DeployCheckReport: DeployCheckReportSchema,
  DeferredList: DeferredListSchema,
  DeferredAnswerResult: DeferredAnswerResultSchema,
}

const ref = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` })

/** A component or parameter schema without the draft and id keywords OpenAPI does not want on each one. */
function strip(schema: JsonObject): JsonObject {
  const { $schema: _schema, $id: _id, ...rest } = schema
  return rest
}

/** A copy of `value` with every `$ref` passed through `rewrite`. */
function rewriteRefs(value: unknown, rewrite: (ref: string) => string): unknown {
  if (Array.isArray(value)) return value.map((item) => rewriteRefs(item, rewrite))
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, key === '$ref' && typeof item === 'string' ? rewrite(item) : rewriteRefs(item, rewrite)]),
  )
}

/**
 * Moves a schema's `$defs` up to `components.schemas` (a `$ref` to
 * `#/$defs/X` would resolve against the whole document there), named by
 * `prefix` and the definition's name.
 */
function lift(schemas: JsonObject, name: string, schema: JsonObject, prefix: string, defsRef: string): void {
  const { $defs, ...rest } = strip(schema) as JsonObject & { $defs?: Record<string, unknown> }
  const rewrite = (ref: string): string => (ref.startsWith(defsRef) ? `#/components/schemas/${prefix}${ref.slice(defsRef.length)}` : ref)
  for (const [defName, definition] of Object.entries($defs ?? {})) add(schemas, `${prefix}${defName}`, rewriteRefs(definition, rewrite) as JsonObject)
  if (Object.keys(rest).length > 0) add(schemas, name, rewriteRefs(rest, rewrite) as JsonObject)
}

function add(schemas: JsonObject, name: string, schema: JsonObject): void {
  if (name in schemas) throw new Error(`openapi: two component schemas are named "${name}"`)
  schemas[name] = schema
}

function componentSchemas(): JsonObject {
  const registry = z.registry<{ id: string }>()
  for (const [id, schema] of Object.entries(COMPONENTS)) registry.add(schema, { id })
  const generated = z.toJSONSchema(registry, { uri: (id) => `#/components/schemas/${id}`, io: 'input', unrepresentable: 'any' }) as { schemas: Record<string, JsonObject> }
  const shared = '#/components/schemas/__shared#/$defs/'
  const schemas: JsonObject = {}
  for (const [id, schema] of Object.entries(generated.schemas)) {
    // zod puts definitions several components share under `__shared`; they become components of their own.
    if (id === '__shared') lift(schemas, id, schema, '', shared)
    else add(schemas, id, rewriteRefs(strip(schema), (ref) => (ref.startsWith(shared) ? `#/components/schemas/${ref.slice(shared.length)}` : ref)) as JsonObject)
  }
  lift(schemas, 'JournalLine', journalLineJsonSchema, 'JournalLine_', '#/$defs/')
  return schemas
}

function parameters(query: z.ZodObject, path: readonly string[] = []): JsonObject[] {
  const pathParameters = path.map((name) => ({ name, in: 'path', required: true, schema: strip(z.toJSONSchema(RunIdSchema) as JsonObject) }))
  const queryParameters = Object.entries(query.shape).map(([name, schema]) => {
    const json = strip(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonObject)
    const { description, ...rest } = json
    const required = !(schema as z.ZodType).safeParse(undefined).success
    return { name, in: 'query', required, ...(description === undefined ? {} : { description }), schema: rest }
  })
  return [...pathParameters, ...queryParameters]
}

function errors(...codes: ServerErrorCode[]): JsonObject {
  const byStatus = new Map<number, ServerErrorCode[]>()
  for (const code of codes) byStatus.set(STATUS_OF_CODE[code], [...(byStatus.get(STATUS_OF_CODE[code]) ?? []), code])
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [String(status), { description: list.join(', '), content: { 'application/json': { schema: ref('Error') } } }]),
  )
}

const json = (schema: string, description: string): JsonObject => ({ description, content: { 'application/json': { schema: ref(schema) } } })

const AUTH_ERRORS: ServerErrorCode[] = ['unauthorized', 'forbidden']

function operation(summary: string, scope: ApiScope | undefined, details: JsonObject): JsonObject {
  return {
    summary,
    ...(scope === undefined ? { security: [] } : { security: [{ bearer: [scope] }], 'x-locus-scope': scope }),
    ...details,
  }
}

function body(schema: string, required: boolean): JsonObject {
  return { required, content: { 'application/json': { schema: ref(schema) } } }
}

/** Each operation's `operationId`, by `METHOD path`. */
const OPERATION_IDS: Readonly<Record<string, string>> = {
  'get /v1/workflows': 'listWorkflows',
  'post /v1/workflows/{name}/runs': 'startRun',
  'get /v1/runs': 'listRuns',
  'get /v1/schedules': 'listSchedules',
  'get /v1/queues': 'listQueues',
  'get /v1/schedules/{id}': 'getSchedule',
  'post /v1/schedules/{id}/pause': 'pauseSchedule',
  'post /v1/schedules/{id}/unpause': 'unpauseSchedule',
  'post /v1/schedules/{id}/trigger': 'triggerSchedule',
  'post /v1/schedules/{id}/backfill': 'backfillSchedule',
  'get /v1/runs/{id}': 'getRun',
  'get /v1/runs/{id}/result': 'getRunResult',
  'get /v1/runs/{id}/journal': 'getRunJournal',
  'get /v1/runs/{id}/events': 'streamRunEvents',
  'post /v1/runs/{id}/events-token': 'createEventsToken',
  'get /v1/runs/{id}/stream': 'streamRunTokens',
  'get /v1/worker/triggers': 'pollWorkerTriggers',
  'post /v1/worker/actions': 'postWorkerActions',
  'post /v1/deploy-check': 'checkDeploy',
  'post /mcp': 'postMcpMessage',
  'get /mcp': 'streamMcpSession',
  'delete /mcp': 'deleteMcpSession',
  'post /v1/runs/{id}/cancel': 'cancelRun',
  'post /v1/runs/{id}/resume': 'resumeRun',
  'get /v1/runs/{id}/deferred': 'listDeferred',
  'post /v1/runs/{id}/deferred/{deferredId}/resolve': 'resolveDeferred',
  'post /v1/runs/{id}/deferred/{deferredId}/reject': 'rejectDeferred',
  'post /v1/runs/{id}/signals/{name}': 'signalRun',
  'post /v1/callbacks/deferred/{id}/{deferredId}': 'settleDeferredByCallback',
  'post /v1/runs/{id}/updates/{name}': 'updateRun',
  'get /v1/runs/{id}/queries/{name}': 'queryRun',
  'get /openapi.json': 'getOpenApiDocument',
  'get /healthz': 'getHealth',
  'get /readyz': 'getReadiness',
}

const STATE_CHANGING_METHODS = new Set(['post', 'put', 'patch', 'delete'])

/** Routes that answer without the runtime or the store. */
const STATIC_PATHS = new Set(['/openapi.json', '/healthz', '/readyz'])

/**
 * What a route that reads or writes the store may also answer: a store that
 * cannot be used (`unavailable` kind, 503) and a fault of the server (500).
 */
const STORE_ERRORS: readonly ServerErrorCode[] = ['unavailable', 'internal_error']

/** The operations that start, continue, stop or answer work, where any kind of package error may end the request. */
const WORK_OPERATIONS = new Set([
  'post /v1/workflows/{name}/runs',
  'post /v1/runs/{id}/cancel',
  'post /v1/runs/{id}/resume',
  'post /v1/runs/{id}/deferred/{deferredId}/resolve',
  'post /v1/runs/{id}/deferred/{deferredId}/reject',
  'post /v1/runs/{id}/signals/{name}',
  'post /v1/callbacks/deferred/{id}/{deferredId}',
  'post /v1/runs/{id}/updates/{name}',
  'post /v1/worker/actions',
  'post /v1/deploy-check',
])

/**
 * What a work operation may also answer: each kind of `ERROR_CODE_REGISTRY`
 * (@locus/outcome) through its API code ({@link API_CODE_OF_KIND}), so every
 * registered code's status is declared where it can happen.
 */
const WORK_ERRORS: readonly ServerErrorCode[] = [...new Set<ServerErrorCode>([...Object.values(API_CODE_OF_KIND), ...Object.values(API_CODE_OVERRIDES)])]

/**
 * What every operation may also answer, from the request checks that run
 * before any route ([security model](docs/server.md)): 403 for a `Host` or an
 * `Origin` the server does not accept, 415 for a body of another content
 * type on a state-changing route; and its `operationId`.
 */
function withRequestChecks(paths: Record<string, Record<string, JsonObject>>): Record<string, Record<string, JsonObject>> {
  const checked: Record<string, Record<string, JsonObject>> = {}
  for (const [path, operations] of Object.entries(paths)) {
    checked[path] = {}
    for (const [method, operation] of Object.entries(operations)) {
      const responses = { ...(operation.responses as Record<string, JsonObject>) }
      const added: ServerErrorCode[] = [
        'forbidden',
        'host_not_allowed',
        ...(STATE_CHANGING_METHODS.has(method) ? (['unsupported_media_type'] as const) : []),
        ...(STATIC_PATHS.has(path) ? [] : STORE_ERRORS),
        ...(WORK_OPERATIONS.has(`${method} ${path}`) ? WORK_ERRORS : []),
      ]
      for (const [status, response] of Object.entries(errors(...added)) as [string, JsonObject][]) {
        const existing = responses[status]
        if (existing === undefined) {
          responses[status] = response
        } else if (existing.content !== undefined) {
          const codes = new Set([...String(existing.description).split(', '), ...String(response.description).split(', ')])
          responses[status] = { ...existing, description: [...codes].join(', ') }
        }
      }
      const operationId = OPERATION_IDS[`${method} ${path}`]
      if (operationId === undefined) throw new Error(`openapi: no operationId for ${method} ${path}`)
      checked[path][method] = { operationId, ...operation, responses }
    }
  }
  return checked
}

/** The OpenAPI 3.1 document of the API, generated from the same zod schemas the routes validate with. */
export function openApiDocument(): JsonObject {
  const runPath = ['id']
  const document = openApiBody(runPath)
  return { ...document, paths: withRequestChecks(document.paths as Record<string, Record<string, JsonObject>>) }
}

function openApiBody(runPath: string[]): JsonObject {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Locus server',
      version: '1',
      description:
        'Start, watch, cancel and resume Locus workflow runs. Every error answers `{ "error": { "code", "message", "issues"?, "requestId" } }`; every response carries `x-request-id`. ' +
        `Scopes: ${API_SCOPES.join(', ')}. Workers reach the server over /v1/worker/* with the seed-001 trigger and action messages.`,
    },
    servers: [{ url: '/', description: 'The server that serves this document (`locus serve` listens on http://127.0.0.1:4477 by default).' }],
    components: {
      schemas: componentSchemas(),
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: `An API key from LOCUS_API_KEYS or LOCUS_API_KEYS_FILE; scopes ${API_SCOPES.join(', ')}.` },
        eventsToken: { type: 'apiKey', in: 'query', name: 'token', description: 'A token from POST /v1/runs/{id}/events-token: reads that run’s events and token stream until it expires.' },
      },
    },
    paths: {
      '/v1/workflows': {
        get: operation('The workflows this server runs, with their input JSON Schemas', 'runs:read', {
          responses: { '200': json('WorkflowList', 'The workflows'), ...errors(...AUTH_ERRORS) },
        }),
      },
      '/v1/workflows/{name}/runs': {
        post: operation('Start a run', 'runs:start', {
          description:
            'With an `Idempotency-Key`, the same key and body again answer 200 with the same run; another body answers 409 idempotency_conflict. ' +
            "With `signal: { name, payload }` (signal-with-start) the signal is checked before anything starts (404 not_found naming the declared signals, 400 with the issues for a bad payload) and journaled as the run's first signal, `via: 'start'`.",
          parameters: [
            { name: 'name', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', minLength: 1, maxLength: 255 } },
          ],
          requestBody: body('StartRunBody', true),
          responses: {
            '202': json('RunAccepted', 'Started'),
            '200': json('RunAccepted', 'The run this Idempotency-Key started before'),
            ...errors('invalid_request', ...AUTH_ERRORS, 'not_found', 'idempotency_conflict', 'payload_too_large', 'shutting_down'),
          },
        }),
      },
      '/v1/runs': {
        get: operation('Runs, newest first', 'runs:read', {
          parameters: parameters(ListRunsQuerySchema),
          responses: { '200': json('RunList', 'One page of runs'), ...errors('invalid_request', ...AUTH_ERRORS) },
        }),
      },
      '/v1/schedules': {
        get: operation('Schedules registered in the store, with their latest slot', 'runs:read', {
          parameters: parameters(z.object({})),
          responses: { '200': json('ScheduleList', 'The schedules'), ...errors('invalid_request', ...AUTH_ERRORS) },
        }),
      },
      '/v1/queues': {
        get: operation('Per concurrency key and shared rate limit: runs running, runs waiting and the oldest wait', 'runs:read', {
          parameters: parameters(z.object({})),
          responses: { '200': json('QueueList', 'The queues'), ...errors('invalid_request', ...AUTH_ERRORS) },
        }),
      },
      '/v1/schedules/{id}': {
        get: operation('A schedule and its slot records', 'runs:read', {
          parameters: parameters(z.object({}), runPath),
          responses: { '200': json('Schedule', 'The schedule'), ...errors('invalid_request', ...AUTH_ERRORS, 'not_found') },
        }),
      },
      '/v1/schedules/{id}/pause': {
        post: operation('Pause a schedule: its slots are recorded paused until it is unpaused', 'runs:start', {
          parameters: parameters(z.object({}), runPath),
          responses: { '200': json('ScheduleState', 'The schedule, paused'), ...errors('invalid_request', ...AUTH_ERRORS, 'not_found', 'payload_too_large') },
        }),
      },
      '/v1/schedules/{id}/unpause': {
        post: operation('Unpause a schedule: its next slot fires', 'runs:start', {
          parameters: parameters(z.object({}), runPath),
          responses: { '200': json('ScheduleState', 'The schedule, active'), ...errors('invalid_request', ...AUTH_ERRORS, 'not_found', 'payload_too_large') },
        }),
      },
      '/v1/schedules/{id}/trigger': {
        post: operation('Ask for a slot now, fired by the process that holds the schedule', 'runs:start', {
          parameters: parameters(z.object({}), runPath),
          responses: { '202': json('SlotsRequested', 'The slot asked for'), ...errors('invalid_request', ...AUTH_ERRORS, 'not_found', 'payload_too_large') },
        }),
      },
      '/v1/schedules/{id}/backfill': {
        post: operation("Ask for every slot of the schedule in a range, whatever its age", 'runs:start', {
          description: 'A slot that has a record already keeps it. A range with more than 10,000 slots is refused (400): backfill it in parts.',
          parameters: parameters(z.object({}), runPath),
          requestBody: body('BackfillBody', true),
          responses: { '202': json('SlotsRequested', 'The slots asked for'), ...errors('invalid_request', ...AUTH_ERRORS, 'not_found', 'payload_too_large') },
        }),
      },
      '/v1/runs/{id}': {
        get: operation('How a run stands', 'runs:read', {
          parameters: parameters(z.object({}), runPath),
          responses: { '200': json('Run', 'The run'), ...errors('invalid_request', ...AUTH_ERRORS, 'not_found') },
        }),
      },
      '/v1/runs/{id}/result': {
        get: operation("The latest execution's result.json once it ended", 'runs:read', {
          description: 'Long-polls up to `wait` seconds. A failed, cancelled or partial run answers 200 with `ok: false`.',
          parameters: parameters(ResultQuerySchema, runPath),
          responses: { '200': json('RunResult', 'Ended'), '202': json('RunPending', 'Not ended yet'), ...errors('invalid_request', ...AUTH_ERRORS, 'not_found') },
        }),
      },
      '/v1/runs/{id}/journal': {
        get: operation('The journal lines of one execution as NDJSON', 'runs:read', {
          parameters: parameters(JournalQuerySchema, runPath),
          responses: {
            '200': { description: 'One journal line (JSON) per line', content: { 'application/x-ndjson': { schema: ref('JournalLine') } } },
            ...errors('invalid_request', ...AUTH_ERRORS, 'not_found'),
          },
        }),
      },
      '/v1/runs/{id}/events': {
        get: operation('The journal as server-sent events, live', 'runs:read', {
          description:
            '`id:` is the journal seq, `event:` the line type, `data:` the line. Honours `Last-Event-ID` (over `after`). A heartbeat comment every 15 s; the stream ends after run_end. 204 when the client already has run_end. ' +
            'A client that cannot send headers (EventSource) passes `?token=` from POST /v1/runs/{id}/events-token instead of a key.',
          security: [{ bearer: ['runs:read'] }, { eventsToken: [] }],
          parameters: [
            ...parameters(EventsQuerySchema, runPath),
            ...parameters(EventsTokenQuerySchema),
            { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' } },
          ],
          responses: {
            '200': { description: 'The event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
            '204': { description: 'The execution ended and the client has every line up to run_end' },
            ...errors('invalid_request', ...AUTH_ERRORS, 'not_found'),
          },
        }),
      },
      '/v1/runs/{id}/stream': {
        get: operation("The run's model tokens as server-sent events, live, across its executions", 'runs:read', {
          description:
            'Each LLM request\'s text as it streams, with the requests whose text was thrown away (a timed-out or retried attempt) marked `discarded`; never in the journal. ' +
            '`id:` is the record\'s offset in the run\'s stream (gap-free from 0); `Last-Event-ID` (over `after`) resumes after it. ' +
            'Default format: the AI SDK UI message stream protocol (`x-vercel-ai-ui-message-stream: v1`: `start`, `data-locus-attempt`, `text-start`/`text-delta`/`text-end`, `data-locus-discarded`, `finish`, `[DONE]`). ' +
            '`format=raw`: one `TokenStreamRecord` per event, and `event: done` once the run ended and every record was sent. ' +
            'An offset beyond the end waits; the stream ends once the run ended and everything was sent; a client that stops reading is dropped and resumes from its last id. ' +
            'A client that cannot send headers passes `?token=` from POST /v1/runs/{id}/events-token.',
          security: [{ bearer: ['runs:read'] }, { eventsToken: [] }],
          parameters: [
            ...parameters(TokenStreamQuerySchema, runPath),
            ...parameters(EventsTokenQuerySchema),
            { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' } },
          ],
          responses: {
            '200': {
              description: 'The event stream; with `format=raw` each event\'s data is a TokenStreamRecord',
              content: { 'text/event-stream': { schema: { type: 'string' }, 'x-locus-event-data': ref('TokenStreamRecord') } },
            },
            '204': { description: 'The run ended and the client has every record' },
            ...errors('invalid_request', ...AUTH_ERRORS, 'not_found', 'stream_pruned'),
          },
        }),
      },
      '/v1/runs/{id}/events-token': {
        post: operation("A short-lived token for this run's event stream, for clients that cannot send headers", 'runs:read', {
          description: 'Signed by this server (HMAC-SHA256 of the run id and the expiry); good for GET /v1/runs/{id}/events?token= and /stream?token= of this run only, until `expiresAt`.',
          parameters: parameters(z.object({}), runPath),
          responses: { '200': json('EventsToken', 'The token'), ...errors('invalid_request', ...AUTH_ERRORS, 'not_found') },
        }),
      },
      '/v1/worker/triggers': {
        get: operation('Long-poll the triggers of the tools a worker serves', 'worker', {
          description:
            'Claims up to `max` queued `tool.execute` / `llm.execute` triggers (seed 001) for the worker, waiting up to `wait` seconds for the first. ' +
            'A worker that neither polls nor answers for `claimTimeoutMs` loses its triggers: each attempt fails as a retryable provider_error.',
          parameters: parameters(WorkerTriggersQuerySchema),
          responses: { '200': json('WorkerTriggers', 'The triggers claimed (possibly none)'), ...errors('invalid_request', ...AUTH_ERRORS, 'not_found', 'shutting_down') },
        }),
      },
      '/v1/worker/actions': {
        post: operation("Answer the triggers a worker holds with the seed's actions", 'worker', {
          description: 'The body is a worker response, `{ "actions": [...] }`; each action names the trigger id it answers. Counts as contact, also with no actions.',
          parameters: parameters(WorkerActionsQuerySchema),
          requestBody: body('WorkerResponse', true),
          responses: { '200': json('WorkerActionsReport', 'What was settled and what was ignored'), ...errors('invalid_request', ...AUTH_ERRORS, 'not_found', 'payload_too_large') },
        }),
      },
      '/v1/deploy-check': {
        post: operation('Replay every run that may still continue against the workflows this server registered', 'runs:read', {
          description:
            'checkDeploy of @locus/runtime over this server\'s store: run it on a server of the build about to ship, pointed at production\'s store, before it takes traffic. ' +
            'It calls no model, runs no tool and writes nothing to the runs. Answers 200 with the report, `ok: false` when a run that may continue would diverge.',
          requestBody: body('DeployCheckBody', false),
          responses: { '200': json('DeployCheckReport', 'The report, one verdict per run'), ...errors('invalid_request', ...AUTH_ERRORS, 'payload_too_large', 'shutting_down') },
        }),
      },
      '/mcp': {
        post: operation("The server's workflows as MCP tools (streamable HTTP transport)", 'runs:start', {
          description:
            'A Model Context Protocol endpoint: POST an `initialize` JSON-RPC request to open a session, then send its `Mcp-Session-Id` header with every request (GET for the server-sent stream, DELETE to end it). ' +
            'The key needs `runs:start` and `runs:read`; `locus_resolve_deferred` is listed only for a key with `deferred:resolve`. Each session belongs to the key that opened it. ' +
            'A failed, cancelled or partial run answers its tool call with `isError: true`, never a success shape.',
          requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', description: 'A JSON-RPC 2.0 message of the MCP protocol.' } } } },
          responses: {
            '200': { description: 'The JSON-RPC answer, as JSON or as a server-sent event stream (text/event-stream)' },
            '202': { description: 'A notification or response accepted' },
            '400': { description: 'A request without a session that is not initialize (JSON-RPC error)' },
            '404': { description: 'No such session for this key: initialize a new one (JSON-RPC error)' },
            ...errors(...AUTH_ERRORS, 'payload_too_large'),
          },
        }),
        get: operation("The MCP session's server-sent stream", 'runs:start', {
          description: 'Opens the stream of server-initiated messages of the session named by `Mcp-Session-Id`.',
          parameters: [{ name: 'Mcp-Session-Id', in: 'header', required: true, schema: { type: 'string' } }],
          responses: {
            '200': { description: 'The session stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
            '400': { description: 'No Mcp-Session-Id: initialize a session first (JSON-RPC error)' },
            '404': { description: 'No such session for this key (JSON-RPC error)' },
            ...errors(...AUTH_ERRORS),
          },
        }),
        delete: operation('End an MCP session', 'runs:start', {
          parameters: [{ name: 'Mcp-Session-Id', in: 'header', required: true, schema: { type: 'string' } }],
          responses: {
            '200': { description: 'The session ended' },
            '400': { description: 'No Mcp-Session-Id (JSON-RPC error)' },
            '404': { description: 'No such session for this key (JSON-RPC error)' },
            ...errors(...AUTH_ERRORS),
          },
        }),
      },
      '/v1/runs/{id}/cancel': {
        post: operation('Cancel a run this server executes (cooperative)', 'runs:cancel', {
          parameters: parameters(z.object({}), runPath),
          requestBody: body('CancelBody', false),
          responses: {
            '202': json('RunAccepted', 'Cancellation asked for'),
            ...errors('invalid_request', ...AUTH_ERRORS, 'not_found', 'run_terminal', 'run_owned', 'payload_too_large'),
          },
        }),
      },
      '/v1/runs/{id}/resume': {
        post: operation('Resume a run in a new execution', 'runs:start', {
          parameters: parameters(z.object({}), runPath),
          requestBody: body('ResumeBody', false),
          responses: {
            '202': json('RunAccepted', 'Resumed; executionId names the new execution'),
            ...errors('invalid_request', ...AUTH_ERRORS, 'not_found', 'run_terminal', 'run_owned', 'payload_too_large', 'shutting_down'),
          },
        }),
      },
      '/v1/runs/{id}/deferred': {
        get: operation("The deferrals of a run that wait for an answer, each with its deadline (`expiresAt`), what the deadline does (`onTimeout`) and, for an escalation, its party (`to`)", 'runs:read', {
          parameters: parameters(z.object({}), runPath),
          responses: { '200': json('DeferredList', 'The deferrals it waits on (none once it ended)'), ...errors('invalid_request', ...AUTH_ERRORS, 'not_found') },
        }),
      },
      '/v1/runs/{id}/deferred/{deferredId}/resolve': {
        post: operation("Answer a deferral with the tool's result (checked against its output schema); the run journals the key's name as `decidedBy` and `via: 'api'` (or the relayed `cli`). A deferral whose deadline passed answers 409", 'deferred:resolve', {
          parameters: [...parameters(z.object({}), runPath), { name: 'deferredId', in: 'path', required: true, schema: { type: 'string' } }],
          requestBody: body('ResolveBody', true),
          responses: { '200': json('DeferredAnswerResult', 'accepted, stored, or the same answer again'), ...errors('invalid_request', ...AUTH_ERRORS, 'not_found', 'already_resolved', 'payload_too_large') },
        }),
      },
      '/v1/runs/{id}/deferred/{deferredId}/reject': {
        post: operation("Answer a deferral with the seed's tool.error; the run journals the key's name as `decidedBy` and `via: 'api'` (or the relayed `cli`)", 'deferred:resolve', {
          parameters: [...parameters(z.object({}), runPath), { name: 'deferredId', in: 'path', required: true, schema: { type: 'string' } }],
          requestBody: body('RejectBody', true),
          responses: { '200': json('DeferredAnswerResult', 'accepted, stored, or the same answer again'), ...errors('invalid_request', ...AUTH_ERRORS, 'not_found', 'already_resolved', 'payload_too_large') },
        }),
      },
      '/v1/runs/{id}/signals/{name}': {
        post: operation('Send a signal the workflow declares to a running run: journaled as signal_received before any wait or handler sees it (a parked run is queued again)', 'deferred:resolve', {
          parameters: [...parameters(z.object({}), runPath), { name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
          requestBody: body('SignalBody', true),
          responses: {
            '202': json('SignalAccepted', "kept in the run's mailbox"),
            ...errors('invalid_request', ...AUTH_ERRORS, 'not_found', 'run_terminal', 'payload_too_large'),
          },
        }),
      },
      '/v1/callbacks/deferred/{id}/{deferredId}': {
        post: operation("Settle a deferral through its pre-signed callback URL (the `callbackUrl` GET /v1/runs/{id}/deferred lists), without an API key", undefined, {
          description:
            'The signature is the authority: HMAC-SHA256 with the server\'s callback secret (`--callback-secret`, `LOCUS_CALLBACK_SECRET`) over the run id, the deferral id and `expires`. ' +
            'A signature that does not match answers 403 `forbidden`, a good one at or past `expires` 410 `callback_expired`; neither reads the body nor writes anything. ' +
            "`expires` is the deferral's deadline, or `callbackTtlSeconds` (7 days) after it opened when it has none. " +
            "The body `{ result }` is checked against the tool's output schema (400 with the issues, the deferral stays open); `{ error }` rejects it. The run journals `decidedBy: 'callback'`, `via: 'callback'`. " +
            'The URL is good for one decision: once the deferral is settled (by its callback or any other way) it answers as a repeated answer does, 200 `already-answered` for the same decision and 409 `already_resolved` for another, writing nothing. ' +
            'On a server without a callback secret the route answers 404.',
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'deferredId', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'expires', in: 'query', required: true, schema: { type: 'string', pattern: '^(?:0|[1-9][0-9]{0,14})$' }, description: 'When the URL expires, in milliseconds since the epoch (signed).' },
            { name: 'signature', in: 'query', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$' }, description: 'The HMAC-SHA256, base64url.' },
          ],
          requestBody: body('CallbackBody', true),
          responses: {
            '200': json('DeferredAnswerResult', 'accepted, stored, or the same answer again'),
            ...errors('invalid_request', 'forbidden', 'not_found', 'callback_expired', 'already_resolved', 'payload_too_large'),
          },
        }),
      },
      '/v1/runs/{id}/updates/{name}': {
        post: operation(
          "Send an update the workflow declares to a running run and wait for its handler: validated (input schema, then `validate`; a rejection journals nothing and is kept as an audit record), journaled as update_received, run by the script's onUpdate handler, answered with its result",
          'deferred:resolve',
          {
            parameters: [...parameters(UpdateQuerySchema, runPath), { name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
            requestBody: body('UpdateBody', true),
            responses: {
              '200': json('UpdateResult', "the handler's result"),
              '202': json('UpdateAccepted', 'accepted and journaled; the wait ran out before the handler finished'),
              ...errors('invalid_request', ...AUTH_ERRORS, 'not_found', 'run_terminal', 'unprocessable', 'payload_too_large'),
            },
          },
        ),
      },
      '/v1/runs/{id}/queries/{name}': {
        get: operation("Answer a query the workflow declares, from the run's journal fold (no process needs to hold the run)", 'runs:read', {
          parameters: [...parameters(z.object({}), runPath), { name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
          responses: { '200': json('QueryResult', "the query's result"), ...errors(...AUTH_ERRORS, 'not_found') },
        }),
      },
      '/openapi.json': { get: operation('This document', undefined, { responses: { '200': { description: 'OpenAPI 3.1' } } }) },
      '/healthz': { get: operation('The process answers', undefined, { responses: { '200': json('Health', 'Alive') } }) },
      '/readyz': {
        get: operation('The server takes new work', undefined, { responses: { '200': json('Ready', 'Ready'), ...errors('shutting_down') } }),
      },
    },
  }
}
