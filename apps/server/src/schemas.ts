import { parseUsd } from '@locus/cost'
import { JsonValueSchema, OnTimeoutPolicySchema, RUN_ID_RULE, RunGapSchema, SerializedErrorSchema } from '@locus/journal'
import { AnswerOutcomeSchema, RunDispositionSchema } from '@locus/outcome'
import { TriggerSchema, WorkerResponseSchema } from '@locus/protocol'
import { DEPLOY_CHECK_VERDICTS, DURATION_FORMS, LAUNCH_MODES, durationMs } from '@locus/runtime'
import { z } from 'zod'
import { SERVER_ERROR_CODES } from './errors.js'

// Every body, query and answer of the API is one of these schemas: routes
// validate with them and /openapi.json is generated from them.

/** The rule of `validateRunId` in @locus/journal, as a pattern a client can read. */
export const RunIdSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, `must be ${RUN_ID_RULE}`)

/** Where a run is; `waiting` is a run that has not ended and waits on an open deferred tool or a `sleep()` timer. */
/**
 * `unfinished`, `taken-over` and `suspended` are executions that stopped
 * without `run_end` (killed, taken over by another worker, suspended on
 * purpose), in the CLI's words; a resume continues the run.
 */
export const RUN_STATUSES = ['queued', 'running', 'waiting', 'cancelling', 'completed', 'failed', 'cancelled', 'unfinished', 'taken-over', 'suspended'] as const
export const RunStatusSchema = z.enum(RUN_STATUSES)
export type RunStatus = z.infer<typeof RunStatusSchema>

/** The three statuses a run ends in. */
export const TERMINAL_STATUSES: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled'])

const positiveInteger = z.number().int().positive()

/** A money budget: a positive decimal number of dollars, as a string or a number, read exactly (never as a float). */
const usdBudget = z.union([z.string(), z.number()], { error: 'must be a positive decimal number of dollars, as "2.50"' }).superRefine((value, context) => {
  try {
    parseUsd(value, 'maxCostUsd', { positive: true })
  } catch (error) {
    context.addIssue({ code: 'custom', message: error instanceof Error ? error.message.replace(/\.$/, '') : String(error) })
  }
})

export const BudgetsSchema = z
  .object({
    maxTotalAgentInvocations: positiveInteger.optional().describe('Physical agent attempts the whole run may start.'),
    deadlineMs: positiveInteger.optional().describe('Milliseconds from the start after which no new call is dispatched.'),
    perCall: z
      .object({ maxToolCalls: positiveInteger.optional(), maxOutputTokens: positiveInteger.optional(), maxAnswerChars: positiveInteger.optional() })
      .strict()
      .optional(),
    maxCostUsd: usdBudget
      .optional()
      .describe('Dollars the whole run tree may spend on LLM requests, as a positive decimal ("2.50"); needs the server\'s prices (locus serve --prices). A call it cannot afford is not run: a gap in the answer.'),
  })
  .strict()
  .describe('Run-level budgets (RunBudgets of @locus/runtime).')

export const StartRunBodySchema = z
  .object({
    input: z.unknown().optional().describe("The workflow's input; validated by its input schema (GET /v1/workflows)."),
    budgets: BudgetsSchema.optional(),
    launchMode: z.enum(LAUNCH_MODES).optional().describe('Selects the per-call budget defaults. Default interactive.'),
    allowUnpriced: z
      .boolean()
      .optional()
      .describe('With budgets.maxCostUsd: start although a model has no price (its requests reserve nothing). Not for runs queued for workers, whose flags decide it.'),
    concurrencyKey: z
      .string()
      .min(1)
      .optional()
      .describe("Stands in for the value of the workflow's first concurrency key (under its limit); with none declared, a key with no limit that takes turns with the others."),
    priority: z.number().int().min(0).max(9).optional().describe('0 to 9: among runs waiting on the same key, a higher one starts first. Default 0.'),
    signal: z
      .object({
        name: z.string().min(1).describe('A signal the workflow declares.'),
        payload: z.unknown().optional().describe("The signal's payload, checked against the schema the workflow declares for it."),
      })
      .strict()
      .optional()
      .describe(
        "Signal-with-start: checked before anything starts (an undeclared name answers 404 naming the declared ones, a payload failing its schema 400 with the issues), then journaled as the run's first signal (`signal_received`, `via: 'start'`, `from` the key's name) before the script runs, so `waitForSignal(name)` returns it at once.",
      ),
  })
  .strict()

export const ResumeBodySchema = z
  .object({ budgets: BudgetsSchema.optional(), launchMode: z.enum(LAUNCH_MODES).optional() })
  .strict()

export const CancelBodySchema = z.object({ reason: z.string().min(1).max(1000).optional().describe("Handed to the runtime's cancellation as its reason.") }).strict()

export const ErrorBodySchema = z.object({
  error: z.object({
    code: z.enum(SERVER_ERROR_CODES),
    message: z.string(),
    issues: z.array(z.string()).optional().describe('Each problem as `field: what is wrong`.'),
    requestId: z.string().optional().describe("The request's id, also in the `x-request-id` header; the server's log has the details under it."),
    firstKept: z.int().min(0).optional().describe('With `stream_pruned`: the first offset of the run\'s token stream still kept; resume after the one before it.'),
  }),
})

export const LinksSchema = z.object({
  self: z.string(),
  result: z.string(),
  journal: z.string(),
  events: z.string(),
  cancel: z.string(),
  resume: z.string(),
})

export const RunAcceptedSchema = z.object({
  runId: z.string(),
  executionId: z.string().describe('The execution started: the run id for a new run, `resume-NNN` for a resume.'),
  status: RunStatusSchema,
  links: LinksSchema,
})

export const WorkflowSchema = z.object({
  name: z.string(),
  description: z.string().optional(),
  inputSchema: z.record(z.string(), z.unknown()).describe('JSON Schema (draft 2020-12) of the input, from the workflow zod schema.'),
})
export const WorkflowListSchema = z.object({ workflows: z.array(WorkflowSchema) })

export const ExecutionSummarySchema = z.object({
  executionId: z.string(),
  kind: z.enum(['root', 'resume', 'replay', 'child']),
  status: RunStatusSchema,
  startedAt: z.string().nullable().describe("When this execution's first line was written."),
  durationMs: z.number().nullable().describe('This execution alone: its run_end duration, or the time its lines span when it stopped without one; null before any line.'),
  counts: z.record(z.string(), z.number()).describe('The RunView counts of this execution alone (a resume counts the calls it served from the journal as replayed).'),
})

/** A deferral that waits for an answer (PendingDeferral of @locus/runtime). */
export const PendingDeferralSchema = z.object({
  deferredId: z.string(),
  tool: z.string(),
  args: z.unknown().optional().describe("The tool's arguments as the run called it."),
  expiresAt: z.string().nullable().describe('When the deferral lapses; null waits indefinitely.'),
  onTimeout: OnTimeoutPolicySchema.optional().describe("What its deadline does (the tool's `onTimeout`): `'reject'`, `{ default }` or `{ escalate: { to, after } }`; absent when it fails the attempt as a timeout."),
  to: z.string().optional().describe('The party an escalation is for.'),
  escalatedFrom: z.string().optional().describe('The deferral whose deadline opened this one.'),
  executionId: z.string(),
  openedAt: z.string().optional().describe('When the deferral opened, ISO 8601.'),
  callbackUrl: z
    .string()
    .optional()
    .describe(
      'With a server callback secret (`--callback-secret`, `LOCUS_CALLBACK_SECRET`): a pre-signed URL on this server that settles this deferral without an API key: POST `{ "result" }` or `{ "error" }` to it. Good until the deferral\'s deadline, or `callbackTtlSeconds` (7 days) after it opened when it has none.',
    ),
})

export const RunSchema = z.object({
  runId: z.string(),
  workflow: z.string(),
  status: RunStatusSchema,
  live: z.boolean().describe('True while this server executes the run.'),
  executionId: z.string().describe('The latest execution: the root, or the last resume.'),
  executions: z.array(ExecutionSummarySchema).describe('The root and every resume, in order, then replays.'),
  disposition: RunDispositionSchema.nullable(),
  answerOutcome: AnswerOutcomeSchema.nullable(),
  startedAt: z.string().nullable().describe("When the run began: its root's run_start."),
  durationMs: z.number().nullable().describe("The sum of its executions' durations, once the latest ended."),
  error: z.string().nullable(),
  gaps: z.array(z.object({ tool: z.string(), criticality: z.string(), reason: z.string().optional() })),
  caveats: z.array(z.string()),
  counts: z
    .record(z.string(), z.number())
    .describe("The run's RunView counts (RunCounts of @locus/journal), added up over the root and every resume; each execution's own are under executions."),
  cost: z
    .object({
      usd: z.string().describe('Dollars the LLM requests cost, as an exact decimal string.'),
      retryOverheadUsd: z.string().describe('Of usd, what went to failed requests and to agent attempts and child runs that were retried.'),
      unpricedRequests: z.number().int().describe('Requests to a model with no price: not in usd.'),
      table: z.string().describe('The price table version the costs were priced with.'),
    })
    .nullable()
    .describe('What the run cost (RunView.cost of @locus/journal), added up over every execution and every child run (child_end.cost); null when the run was not priced.'),
  lastSeq: z.number().int().describe('The `seq` of the last journal line of the latest execution; -1 before any.'),
  deferred: z.array(PendingDeferralSchema).describe('The deferrals the run waits on (status `waiting`); empty once it ended.'),
  sleepingUntil: z
    .string()
    .nullable()
    .describe('While the run sleeps (`sleep()` in its script, status `waiting`): the earliest due time of its open timers, ISO 8601; null otherwise.'),
  waits: z
    .object({
      queued: z
        .object({
          keys: z.array(z.string()).describe('The concurrency keys the run holds a slot of.'),
          reason: z.enum(['concurrency', 'rate', 'priority']).describe('What it waited for.'),
          waitedMs: z.number().int().describe('Milliseconds from its enqueue to its start.'),
        })
        .nullable()
        .describe('How long the run waited to start and for what (its `queued` line, RunView.queued); null when it started at once.'),
      rate: z
        .object({
          count: z.number().int().describe('LLM requests that waited for a rate limit.'),
          waitedMs: z.number().int().describe('Milliseconds they waited in all.'),
        })
        .describe('Its LLM requests\' waits for shared rate limits (`rate_wait` lines, RunView.rateWaits).'),
    })
    .describe('What the run waited for, spending no attempt, retry or invocation.'),
  links: LinksSchema,
})

/** One key of `GET /v1/queues`. */
export const QueueItemSchema = z.object({
  key: z.string().describe('A concurrency key, or `rate:<provider>/<model>` for a shared rate limit.'),
  running: z.number().int().describe('Runs holding a slot of the key (for a rate limit: requests started in the last minute).'),
  waiting: z.number().int().describe('Runs waiting to start (for a rate limit: calls waiting for room).'),
  oldestWaitMs: z.number().int().describe('How long the oldest of them has waited; 0 when none waits.'),
})
export const QueueListSchema = z.object({ queues: z.array(QueueItemSchema) })

export const RunListItemSchema = z.object({
  runId: z.string(),
  workflow: z.string(),
  status: RunStatusSchema,
  createdAt: z.string().nullable(),
  startedAt: z.string().nullable(),
  links: z.object({ self: z.string() }),
})
export const RunListSchema = z.object({
  runs: z.array(RunListItemSchema),
  nextCursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last one.'),
})

/** One slot's record: how it ended. */
export const SlotRecordSchema = z.object({
  slot: z.string().describe('The slot time, ISO 8601 UTC'),
  outcome: z.enum(['started', 'skipped-overlap', 'missed', 'paused', 'failed-to-start']),
  runId: z.string().optional(),
  error: z.string().optional(),
  source: z.enum(['schedule', 'trigger', 'backfill']).optional(),
  recordedAt: z.string(),
})
/** A registered schedule and its live state. */
export const ScheduleItemSchema = z.object({
  schedule: z.object({ id: z.string(), workflow: z.string(), cron: z.string().optional(), every: z.string().optional(), timezone: z.string().optional(), input: z.unknown(), overlap: z.string(), catchUpWindow: z.string(), jitter: z.string().optional(), paused: z.boolean().optional() }),
  paused: z.boolean(),
  registeredAt: z.string(),
})
export const ScheduleListSchema = z.object({ schedules: z.array(ScheduleItemSchema.extend({ lastSlot: SlotRecordSchema.nullable() })) })
export const ScheduleSchema = ScheduleItemSchema.extend({ slots: z.array(SlotRecordSchema).describe('Slot records, newest first (at most 100)') })

/** The body of `POST /v1/schedules/{id}/backfill`: the range whose slots are asked for, both ends included. */
export const BackfillBodySchema = z
  .object({
    from: z.string().refine((text) => Number.isFinite(Date.parse(text)), 'not a time; pass ISO 8601, as 2026-01-01T00:00:00Z').describe('The first time of the range, ISO 8601'),
    to: z.string().refine((text) => Number.isFinite(Date.parse(text)), 'not a time; pass ISO 8601, as 2026-01-01T00:00:00Z').describe('The last time of the range, ISO 8601'),
  })
  .strict()
/** What a trigger or a backfill asked for: the slots the holding process fires. */
export const SlotsRequestedSchema = z.object({ scheduleId: z.string(), requested: z.array(z.string()).describe('Slot times, ISO 8601, oldest first') })

/** `result.json` of the latest execution, with `ok` true only for a completed run whose answer is complete. */
export const RunResultResponseSchema = z.object({
  schema: z.string(),
  runId: z.string(),
  executionId: z.string(),
  workflow: z.string(),
  disposition: RunDispositionSchema,
  ok: z.boolean().describe('True only when the run completed with a complete answer; false for failed, cancelled and partial runs.'),
  result: JsonValueSchema,
  error: SerializedErrorSchema.optional(),
  startedAt: z.string(),
  endedAt: z.string(),
  answerOutcome: AnswerOutcomeSchema.optional(),
  gaps: z.array(RunGapSchema).optional(),
  caveats: z.array(z.string()).optional(),
})

export const RunPendingSchema = z.object({ runId: z.string(), executionId: z.string(), status: RunStatusSchema, links: LinksSchema })

export const HealthSchema = z.object({ ok: z.literal(true) })
export const ReadySchema = z.object({ ready: z.literal(true), activeRuns: z.number().int(), openStreams: z.number().int() })

const seqSchema = z.coerce.number().int().min(-1)

export const ListRunsQuerySchema = z.object({
  workflow: z.string().min(1).optional().describe('Only runs of this workflow.'),
  status: RunStatusSchema.optional().describe('Only runs in this status.'),
  cursor: z.string().min(1).optional().describe('`nextCursor` of the previous page.'),
  limit: z.coerce.number().int().min(1).max(100).optional().describe('Runs per page, newest first. Default 20, at most 100.'),
})

export const ResultQuerySchema = z.object({
  wait: z.coerce.number().min(0).optional().describe('Seconds to wait for the end before answering 202; capped at the server maximum (60 by default).'),
})

export const JournalQuerySchema = z.object({
  after: seqSchema.optional().describe('Only lines whose `seq` is greater. Default -1.'),
  limit: z.coerce.number().int().min(1).max(100_000).optional().describe('At most this many lines.'),
  execution: RunIdSchema.optional().describe('Which execution (`resume-001`, ...). Default the latest.'),
})

export const EventsQuerySchema = z.object({
  after: seqSchema.optional().describe('Start after this `seq`; the `Last-Event-ID` header wins over it.'),
  execution: RunIdSchema.optional().describe('Which execution. Default the latest.'),
  follow: z
    .enum(['run'])
    .optional()
    .describe(
      '`run`: follow the run across its executions on this one stream, from its root (or the `Last-Event-ID`) through every resume and takeover, with event ids `<executionId>:<seq>`; it ends after the `run_end` of the latest execution. Not with `execution`.',
    ),
})

/** `POST /v1/runs/{id}/deferred/{deferredId}/resolve`: the tool's result, checked against its output schema. */
export const ResolveBodySchema = z
  .object({
    result: z.unknown().describe("The deferred tool's result."),
    via: z.enum(['api', 'cli']).optional().describe('The surface a client relays the answer from (`cli` for `locus resolve --server`), journaled as `via`; default `api`. `decidedBy` is always the key.'),
  })
  .strict()

/** `POST /v1/runs/{id}/signals/{name}`: the signal's payload, checked against the schema the workflow declares for it. */
export const SignalBodySchema = z.object({ payload: z.unknown().describe("The signal's payload.") }).strict()

/** What sending a signal answers (202): the signal's place in the run's mailbox. */
export const SignalAcceptedSchema = z.object({ runId: z.string(), name: z.string(), signalSeq: z.int().min(0), status: z.literal('stored') })

/** `POST /v1/runs/{id}/updates/{name}`: the update's input, checked against the input schema and `validate` the workflow declares for it. */
export const UpdateBodySchema = z.object({ input: z.unknown().describe("The update's input.") }).strict()

/** `POST /v1/runs/{id}/updates/{name}?wait=`: how long to wait for the handler. */
export const UpdateQuerySchema = z.object({
  wait: z.coerce.number().min(0).optional().describe("Seconds to wait for the update's handler before answering 202 with its updateId; capped at the server maximum (60 by default). Default 30."),
})

/** What an update answers once its handler returned (200). */
export const UpdateResultSchema = z.object({ runId: z.string(), name: z.string(), updateId: z.string(), result: z.unknown().describe("The handler's result, checked against the update's output schema.") })

/** What an update answers when the wait ran out first (202): it was accepted and journaled, and its handler runs; the journal's `update_completed` has its result. */
export const UpdateAcceptedSchema = z.object({ runId: z.string(), name: z.string(), updateId: z.string(), status: z.literal('accepted') })

/** What a query answers: the value the workflow's query computes from the run's journal fold. */
export const QueryResultSchema = z.object({ runId: z.string(), name: z.string(), result: z.unknown() })

/** `POST /v1/runs/{id}/deferred/{deferredId}/reject`: the seed's tool.error. */
export const RejectBodySchema = z
  .object({
    error: z.string().min(1).max(10_000),
    retryable: z.boolean().optional().describe('Terminal unless true.'),
    code: z.enum(['provider_error', 'rate_limited', 'refused', 'budget_exceeded', 'deadline_exceeded']).optional(),
    via: z.enum(['api', 'cli']).optional().describe('The surface a client relays the answer from (`cli` for `locus resolve --server`); default `api`.'),
  })
  .strict()

/** `POST` to a deferral's `callbackUrl`: the tool's result, or the seed's tool.error (exactly one of `result` and `error`). */
export const CallbackBodySchema = z
  .object({
    result: z.unknown().optional().describe("The deferred tool's result, checked against its output schema."),
    error: z.string().min(1).max(10_000).optional().describe('Reject the deferral with this tool.error instead.'),
    retryable: z.boolean().optional().describe('With `error`: terminal unless true.'),
    code: z.enum(['provider_error', 'rate_limited', 'refused', 'budget_exceeded', 'deadline_exceeded']).optional().describe('With `error`: its code.'),
  })
  .strict()
  .refine((body) => Object.hasOwn(body, 'result') !== (body.error !== undefined), { error: 'give exactly one of result and error' })
  .refine((body) => body.error !== undefined || (body.retryable === undefined && body.code === undefined), { error: 'retryable and code go with error' })

/** `GET /v1/runs/{id}/events?token=`: a token from `POST /v1/runs/{id}/events-token`, in place of the Authorization header. */
/** The formats of `GET /v1/runs/{id}/stream`: the AI SDK's UI message stream, or one plain record per event. */
export const TOKEN_STREAM_FORMATS = ['ui', 'raw'] as const

/** `GET /v1/runs/{id}/stream`. */
export const TokenStreamQuerySchema = z.object({
  after: seqSchema.optional().describe('Start after this offset; the `Last-Event-ID` header wins over it.'),
  format: z
    .enum(TOKEN_STREAM_FORMATS)
    .optional()
    .describe('`ui` (the default): the AI SDK UI message stream protocol; `raw`: one record `{ offset, executionId, callId, attempt, llmAttempt, kind, text?, cause? }` per event.'),
})

/** One record of `GET /v1/runs/{id}/stream?format=raw`: a piece of an LLM request's text, its discard, or its end. */
export const TokenStreamRecordSchema = z.object({
  offset: z.int().min(0).describe("The record's place in the run's stream, gap-free from 0; also the event's `id:`."),
  executionId: z.string(),
  callId: z.string(),
  attempt: z.int().min(1),
  llmAttempt: z.int().min(1).describe('Which request of the attempt (retries by the host count up).'),
  kind: z.enum(['delta', 'discarded', 'end']),
  text: z.string().optional().describe('The text of a `delta`.'),
  cause: z.string().optional().describe('Why a `discarded` request\'s text was thrown away (`call-timeout`, `llm-retry`, ...).'),
})

export const EventsTokenQuerySchema = z.object({
  token: z.string().min(1).optional().describe('A token from POST /v1/runs/{id}/events-token, for clients that cannot send headers (EventSource); good for this run only, until it expires.'),
})

/** `POST /v1/runs/{id}/events-token`. */
export const EventsTokenSchema = z.object({
  runId: z.string(),
  token: z.string().describe('Pass as `?token=` to GET /v1/runs/{id}/events; signed by this server for this run only.'),
  expiresAt: z.string().describe('After this the token is refused; ask for a new one.'),
  events: z.string().describe('The event stream URL with the token.'),
})

/** How a worker names itself: the same name on every poll and answer keeps its claims alive. */
export const WorkerNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, 'must be 1-128 letters, digits, ".", "_", ":" or "-", starting with a letter or digit')

export const WorkerTriggersQuerySchema = z.object({
  worker: WorkerNameSchema.describe('Names this worker process; use the same name on POST /v1/worker/actions and every later poll.'),
  tools: z
    .string()
    .transform((text) => text.split(',').map((name) => name.trim()).filter((name) => name.length > 0))
    .pipe(z.array(z.string().max(256)).min(1, 'must name at least one tool').max(100))
    .describe('Comma-separated tool names this worker serves; `llm.execute` takes LLM calls.'),
  wait: z.coerce.number().min(0).optional().describe('Seconds to wait for a trigger when none is queued; capped at the server maximum (60 by default). Default 0.'),
  max: z.coerce.number().int().min(1).max(100).optional().describe('At most this many triggers in one answer. Default 10.'),
})

export const WorkerActionsQuerySchema = z.object({ worker: WorkerNameSchema.describe('The name this worker polled with.') })

/** The triggers a poll claimed, in the seed-001 wire format. */
export const WorkerTriggersSchema = z.object({
  triggers: z.array(TriggerSchema).describe('Claimed for this worker: answer each with POST /v1/worker/actions before the claim lapses.'),
  claimTimeoutMs: z.number().int().describe('A worker that neither polls nor answers for this long loses its triggers (they fail retryably).'),
})

/** What `POST /v1/worker/actions` did with each action. */
export const WorkerActionsReportSchema = z.object({
  accepted: z.array(z.string()).describe('Trigger ids settled by these actions.'),
  ignored: z
    .array(z.object({ id: z.string().nullable(), reason: z.string() }))
    .describe('Actions that matched no trigger this worker holds (answered already, expired, held by another worker), each with why.'),
})

export { WorkerResponseSchema }

/** `POST /v1/deploy-check`: which runs to replay against the workflows this server registered. */
export const DeployCheckBodySchema = z
  .object({
    workflows: z
      .array(z.string().min(1))
      .min(1, 'must name at least one workflow; leave it out to check all this server registered')
      .optional()
      .describe('Names of workflows this server registered (GET /v1/workflows) whose runs to check. Default all of them.'),
    since: z
      .string()
      .refine((text) => durationMs(text) !== undefined, `must be a duration such as ${DURATION_FORMS}, longer than zero`)
      .optional()
      .describe('Only runs started within this period back from now, such as 7d. Default every run.'),
    all: z.boolean().optional().describe('Check finished runs too (reported, but they cannot make `ok` false). Default false.'),
    concurrency: z.number().int().min(1).max(16).optional().describe('Runs read and replayed at once. Default 4.'),
  })
  .strict()

const LiveAgainSchema = z.object({
  agent: z.number().int(),
  tool: z.number().int(),
  remoteTool: z.number().int(),
  child: z.number().int(),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  usd: z.string().nullable().describe('Dollars those calls cost when recorded (every recorded attempt, child runs included), as an exact decimal string; null when none of them was priced.'),
  unpricedRequests: z.number().int().describe('Of their recorded requests, those to a model with no price: not in usd.'),
})

/** The report of `checkDeploy` (@locus/runtime), as the endpoint answers it. */
export const DeployCheckReportSchema = z.object({
  ok: z.boolean().describe('False when a run that may still continue would diverge, no longer fits its input schema, or could not be replayed.'),
  runs: z.array(
    z.object({
      runId: z.string(),
      workflow: z.string(),
      standing: z.enum(['completed', 'failed', 'cancelled', 'unfinished']),
      continuable: z.boolean().describe('The run may still continue, so a divergence would hit it on resume.'),
      openDeferrals: z.number().int().optional(),
      owner: z.string().optional().describe('The worker holding its lease (PostgreSQL store).'),
      verdict: z.enum(DEPLOY_CHECK_VERDICTS),
      divergence: z.object({ ordinal: z.string(), fields: z.array(z.string()) }).optional().describe('The first call whose request changed, and which of its fields.'),
      liveAgain: LiveAgainSchema.describe('Recorded calls after the divergence that would run live again on resume, by kind, with their recorded token usage and, for a priced run, dollars.'),
      issues: z.array(z.string()).optional(),
    }),
  ),
})

/** `GET /v1/runs/{id}/deferred`: the deferrals the run waits on. */
export const DeferredListSchema = z.object({ runId: z.string(), deferred: z.array(PendingDeferralSchema) })

/** `POST /v1/runs/{id}/deferred/{deferredId}/resolve` and `/reject`: what became of the answer. */
export const DeferredAnswerResultSchema = z.object({
  runId: z.string(),
  deferredId: z.string(),
  status: z.enum(['accepted', 'stored', 'already-answered']).describe('`accepted`: the run took it; `stored`: kept for the run to take when it next runs; `already-answered`: the same answer again, a no-op.'),
})
