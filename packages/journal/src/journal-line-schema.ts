import { AnswerOutcomeSchema, ErrorCodeSchema, FailureCauseSchema, RunDispositionSchema, StepCriticalitySchema } from '@locus/outcome'
import { z } from 'zod'
import { JsonValueSchema } from './json-value-schema.js'
import { SerializedErrorSchema } from './serialized-error.js'

/** The version written as `v` on every journal line. A reader refuses any other. */
export const JOURNAL_SCHEMA_VERSION = 1

/** Every journal line type, in the order a run usually writes them. */
export const JOURNAL_LINE_TYPES = [
  'run_start',
  'run_end',
  'agent_start',
  'agent_end',
  'error',
  'retry',
  'group_start',
  'group_end',
  'tool_start',
  'tool_end',
  'budget_change',
  'replay_diverged',
  'log',
  'llm_attempt',
  'deferred_open',
  'deferred_settled',
  'deferred_expired',
  'child_start',
  'child_end',
  'lease_acquired',
  'lease_lost',
  'worker_takeover',
  'run_cancel_requested',
  'timer_start',
  'timer_fired',
  'signal_received',
  'signal_wait_start',
  'signal_wait_end',
  'update_received',
  'update_completed',
  'update_failed',
  'queued',
  'rate_wait',
] as const
export type JournalLineType = (typeof JOURNAL_LINE_TYPES)[number]

/** The three fields that name one physical attempt of one logical `agent()` call. They travel together. */
export const ATTEMPT_TRIO_FIELDS = ['attempt', 'attempts', 'logicalCallId'] as const

/** The line types that record an agent attempt and so carry the attempt trio (on `error`, all of it or none). */
export const ATTEMPT_TRIO_LINE_TYPES = ['agent_start', 'agent_end', 'error'] as const

/** Every retry boundary message starts with this marker, so a plain-text search finds them all. */
export const RETRY_MESSAGE_PREFIX = '[workflow:retry]'

/**
 * What can refuse a retry that the call's own rule allowed: the run's shared
 * retry budget, its invocation cap, its deadline, a cancellation, or a money
 * budget (`cost-budget`: the run's or the call's `maxCostUsd` left less than
 * the retry's worst case).
 */
export const RETRY_REFUSERS = ['retry-budget', 'invocation-cap', 'run-deadline', 'cancelled', 'cost-budget'] as const
export type RetryRefuser = (typeof RETRY_REFUSERS)[number]

const nonEmpty = z.string().min(1)
const count = z.int().min(0)
const duration = z.number().min(0).describe('Milliseconds.')

/** Fields every line carries; the writer fills them in. */
const common = {
  v: z.literal(JOURNAL_SCHEMA_VERSION).describe('Journal schema version.'),
  seq: count.describe('Position in this file; strictly increasing.'),
  ts: z.iso.datetime({ offset: true }).describe('When the line was written, ISO 8601.'),
  runId: nonEmpty.describe('The run this line belongs to.'),
  executionId: nonEmpty.describe('The execution (root, resume attempt or child) that wrote this file.'),
}

const attemptTrio = {
  attempt: z.int().min(1).describe('Which physical attempt of the logical call this is, from 1.'),
  attempts: z.int().min(1).describe('How many attempts the call declared.'),
  logicalCallId: nonEmpty.describe('The logical agent() call every attempt belongs to; retries are grouped by it.'),
}

const callPlace = {
  label: z.string().optional(),
  phase: z.string().optional(),
  groupId: z.string().optional(),
}

const AGENT_STATUSES = ['completed', 'failed'] as const
const GROUP_KINDS = ['parallel', 'pipeline'] as const
const GROUP_OUTCOMES = ['completed', 'failed', 'hard-stopped', 'cancelled'] as const
const TOOL_STATUSES = ['completed', 'failed', 'timed-out'] as const
const LOG_LEVELS = ['info', 'warn', 'error'] as const

/**
 * `retryRefused` on an attempt's terminal record (`agent_end`, `error` or
 * `tool_end`): the attempt failed in a way its rule retries, attempts were
 * left, and something run-wide refused the retry. No `retry` line follows it.
 */
export const RetryRefusedSchema = z
  .object({
    by: z.enum(RETRY_REFUSERS).describe('What refused the retry: retry-budget, invocation-cap, run-deadline, cancelled or cost-budget.'),
    delayMs: duration.optional().describe('The backoff the refused retry would have waited first (tool retries).'),
    costBudget: z
      .object({
        scope: z.enum(['run', 'call']).describe("Which budget: the run tree's maxCostUsd or the call's own."),
        limitUsd: z.string().regex(/^\d+\.\d{6,}$/).describe('The budget, in dollars.'),
        remainingUsd: z.string().regex(/^\d+\.\d{6,}$/).describe('What was left of it: the limit less what was spent and what is held for attempts in flight.'),
        neededUsd: z.string().regex(/^\d+\.\d{6,}$/).describe("The retry's worst case, which did not fit."),
      })
      .strict()
      .optional()
      .describe('With by cost-budget: the money budget that refused the retry.'),
  })
  .meta({ id: 'RetryRefused' })

const UsageSchema = z
  .object({
    inputTokens: count,
    outputTokens: count,
    cacheReadTokens: count.optional().describe('Of inputTokens, read from the provider\'s prompt cache.'),
    cacheWriteTokens: count.optional().describe('Of inputTokens, written to the provider\'s prompt cache.'),
    reasoningTokens: count.optional().describe('Of outputTokens, reasoning.'),
  })
  .describe('Tokens the provider reported for this attempt.')

/** Dollars as the journal writes them: a non-negative decimal string with at least six places, never a float. */
const usdText = z.string().regex(/^\d+\.\d{6,}$/, 'a decimal string with at least six places, such as "0.004210"')

/**
 * What one LLM request cost, priced from its usage by the run's price table
 * (`table` is that table's version, as `run_start` records it), or why it
 * has no price: a model the table does not know is `unpriced`, never zero.
 */
export const CostSchema = z
  .union([
    z.object({ usd: usdText, table: nonEmpty }).strict(),
    z.object({ unpriced: z.literal(true), table: nonEmpty, model: z.string() }).strict(),
  ])
  .describe('What a request cost in dollars, or unpriced with the model the price table did not know.')

/** What one agent attempt cost: the sum of its priced LLM requests, and how many had no price. */
export const AttemptCostSchema = z
  .object({
    usd: usdText,
    table: nonEmpty,
    unpriced: count.optional().describe('Requests of the attempt whose model had no price; their cost is not in usd.'),
  })
  .strict()
  .describe('The cost of one agent attempt: its LLM requests priced, or its own usage when the host reported no requests.')

/**
 * What one spawn attempt's child run cost, its own children and retries
 * included, as the child's run view summed it when the child ended.
 */
export const ChildCostSchema = z
  .object({
    usd: usdText,
    retryOverheadUsd: usdText.describe('Of usd, what the child threw away on its own retries.'),
    unpriced: count.optional().describe('Requests of the child run whose model had no price; their cost is not in usd.'),
    table: nonEmpty,
  })
  .strict()
  .describe("The cost of a child run: every priced LLM request of it and of its children, with its own retry overhead apart.")

/** One gap of a run's answer: a tool it could not use, how much the answer needed it, and why. */
export const RunGapSchema = z
  .object({ tool: nonEmpty, criticality: StepCriticalitySchema, reason: z.string().optional() })
  .meta({ id: 'RunGap' })

/** How a `choice` answer was repaired: the child's first answer was none of the choices, so the call asked once more (`clarification`) or took its `choiceFallback` (`fallback`). */
export const ChoiceRepairSchema = z
  .object({
    from: z.string().describe("The child's first answer, as it came (its first 200 characters)."),
    to: nonEmpty.describe('The declared choice the call answered with.'),
    via: z.enum(['clarification', 'fallback']).describe('clarification: the child named a choice when asked again; fallback: it did not, and choiceFallback was taken.'),
  })
  .meta({ id: 'ChoiceRepair' })

/** `run_start`: the first line of an execution. */
export const RunStartLineSchema = z
  .object({
    ...common,
    type: z.literal('run_start'),
    workflow: nonEmpty.describe('Workflow name.'),
    input: JsonValueSchema,
    options: JsonValueSchema.describe('Budgets, concurrency, launch mode, durability.'),
    parentRunId: nonEmpty.optional().describe('Set on a child run: the run whose script spawned it.'),
    parentExecutionId: nonEmpty.optional().describe('Set on a child run: the execution of the parent whose journal holds the spawn.'),
    parentCallId: nonEmpty.optional().describe("Set on a child run: the spawn's childCallId in the parent's journal."),
    resumeOf: nonEmpty.optional().describe('The execution this one resumes.'),
    workspaceMode: nonEmpty
      .optional()
      .describe('The filesystem isolation intent the workflow declares, for review; not authorization, a sandbox or a tool allowlist.'),
  })
  .meta({ id: 'RunStartLine' })

/** `run_end`: the run's durable disposition. `ok` is true exactly when the disposition is `completed`. */
export const RunEndLineSchema = z
  .object({
    ...common,
    type: z.literal('run_end'),
    disposition: RunDispositionSchema,
    ok: z.boolean(),
    result: JsonValueSchema.describe('The detached result, or the JSON-safe failure envelope.'),
    error: SerializedErrorSchema.optional(),
    durationMs: duration,
    answerOutcome: AnswerOutcomeSchema.optional().describe(
      'The answer outcome for metrics (complete, partial, cannot_answer, failed), judged once at the end; readers never recompute it.',
    ),
    gaps: z.array(RunGapSchema).optional().describe('The gaps of the Answer the run returned, one per tool it could not use.'),
    caveats: z.array(z.string()).optional().describe('The caveats of the Answer the run returned, kept apart from its text.'),
  })
  .refine((line) => line.ok === (line.disposition === 'completed'), {
    error: 'ok must be true exactly when disposition is "completed"',
    path: ['ok'],
  })
  .meta({ id: 'RunEndLine', description: "The run's durable disposition. Rule: ok is true exactly when disposition is completed." })

/** `agent_start`: one physical attempt of an `agent()` call was dispatched. */
export const AgentStartLineSchema = z
  .object({
    ...common,
    type: z.literal('agent_start'),
    callId: nonEmpty.describe('This physical attempt; every attempt has its own.'),
    ...attemptTrio,
    agent: nonEmpty,
    ...callPlace,
    ordinal: nonEmpty.describe('Position of the logical call in the group tree, e.g. g1[2].1; shared by its attempts.'),
    requestKey: z.string().optional().describe('Canonical request key used by replay.'),
    timeoutMs: z.number().positive().optional(),
    prompt: z.string(),
  })
  .refine((line) => line.attempt <= line.attempts, { error: 'attempt must not exceed attempts', path: ['attempt'] })
  .meta({ id: 'AgentStartLine', description: 'One physical attempt of an agent() call was dispatched. Rule: attempt <= attempts.' })

/** `agent_end`: an attempt answered or failed. `failureCause` is present exactly when it failed. */
export const AgentEndLineSchema = z
  .object({
    ...common,
    type: z.literal('agent_end'),
    callId: nonEmpty,
    ...attemptTrio,
    agent: nonEmpty,
    ...callPlace,
    ordinal: nonEmpty,
    status: z.enum(AGENT_STATUSES),
    failureCause: FailureCauseSchema.optional().describe('Why the attempt failed; required when status is failed.'),
    reason: z.string().optional().describe('Human-readable detail; never branch on it.'),
    stopReason: z.string().optional(),
    durationMs: duration,
    usage: UsageSchema.optional(),
    cost: AttemptCostSchema.optional().describe('What the attempt cost, when the run prices requests; absent on a replayed answer, which cost nothing now.'),
    replayed: z.boolean().optional().describe('True when the answer came from a recording.'),
    answer: JsonValueSchema.optional().describe(
      'The answer of a completed attempt (text, or the chosen value), so the journal alone is enough to replay the call.',
    ),
    retryRefused: RetryRefusedSchema.optional().describe('Set when this attempt would have been retried but the run refused the retry.'),
    repaired: ChoiceRepairSchema.optional().describe(
      "Set on a completed choice call whose first answer was none of the choices: what it said, the choice it ended with, and how. Absent when the first answer was one of them (and on journals written before it was recorded).",
    ),
  })
  .refine((line) => line.attempt <= line.attempts, { error: 'attempt must not exceed attempts', path: ['attempt'] })
  .refine((line) => (line.status === 'failed') === (line.failureCause !== undefined), {
    error: 'failureCause is required when status is "failed" and not allowed when it is "completed"',
    path: ['failureCause'],
  })
  .meta({ id: 'AgentEndLine', description: 'An attempt answered or failed. Rules: attempt <= attempts; failureCause is present exactly when status is failed.' })

/**
 * `error`: something threw. When an agent attempt threw instead of answering,
 * this is its terminal record and carries the attempt trio.
 */
export const ErrorLineSchema = z
  .object({
    ...common,
    type: z.literal('error'),
    message: z.string(),
    error: SerializedErrorSchema,
    failureCause: FailureCauseSchema.optional().describe('Set when the error ends an agent call, e.g. sdk-unavailable.'),
    callId: nonEmpty.optional(),
    agent: nonEmpty.optional(),
    ordinal: nonEmpty.optional(),
    ...callPlace,
    attempt: attemptTrio.attempt.optional(),
    attempts: attemptTrio.attempts.optional(),
    logicalCallId: attemptTrio.logicalCallId.optional(),
    retryRefused: RetryRefusedSchema.optional().describe('Set when the attempt that threw would have been retried but the run refused the retry.'),
  })
  .refine(
    (line) => {
      const present = [line.attempt, line.attempts, line.logicalCallId].filter((field) => field !== undefined).length
      return present === 0 || present === 3
    },
    { error: 'attempt, attempts and logicalCallId travel together: all or none', path: ['logicalCallId'] },
  )
  .refine((line) => line.attempt === undefined || line.attempts === undefined || line.attempt <= line.attempts, {
    error: 'attempt must not exceed attempts',
    path: ['attempt'],
  })
  .meta({ id: 'ErrorLine', description: 'Something threw; the terminal record of an attempt that threw. Rule: attempt, attempts and logicalCallId are all present or all absent.' })

/** `retry`: the boundary between a discarded attempt and the next one. */
export const RetryLineSchema = z
  .object({
    ...common,
    type: z.literal('retry'),
    kind: z.enum(['agent', 'tool', 'child']),
    message: z.string().startsWith(RETRY_MESSAGE_PREFIX).describe('Starts with [workflow:retry].'),
    logicalCallId: nonEmpty.optional().describe('For agent retries: the logical call retried.'),
    callId: nonEmpty.optional().describe('The discarded attempt (callId; toolCallId for tools, childCallId for children).'),
    fromAttempt: z.int().min(1),
    toAttempt: z.int().min(2),
    attempts: z.int().min(2),
    cause: nonEmpty.describe('Why the discarded attempt failed: a failure cause or an error code.'),
    delayMs: duration.optional(),
  })
  .refine((line) => line.fromAttempt < line.toAttempt && line.toAttempt <= line.attempts, {
    error: 'fromAttempt < toAttempt <= attempts must hold',
    path: ['toAttempt'],
  })
  .meta({ id: 'RetryLine', description: 'The boundary between a discarded attempt and the next. Rule: fromAttempt < toAttempt <= attempts.' })

/** `group_start`: a `parallel()` or `pipeline()` group began. */
export const GroupStartLineSchema = z
  .object({
    ...common,
    type: z.literal('group_start'),
    groupId: nonEmpty,
    groupKind: z.enum(GROUP_KINDS),
    total: count,
    parentGroupId: nonEmpty.optional(),
    label: z.string().optional(),
    phase: z.string().optional(),
    concurrency: z.int().min(1).optional(),
  })
  .meta({ id: 'GroupStartLine' })

/** `group_end`: the group's barrier settled. A group with failures or undispatched slots is never `completed`. */
export const GroupEndLineSchema = z
  .object({
    ...common,
    type: z.literal('group_end'),
    groupId: nonEmpty,
    groupKind: z.enum(GROUP_KINDS),
    total: count,
    completed: count,
    failed: count,
    notDispatched: count,
    outcome: z.enum(GROUP_OUTCOMES),
    stageIndex: count.optional().describe('Pipelines: the stage at which the first failure happened.'),
  })
  .refine((line) => line.outcome !== 'completed' || (line.failed === 0 && line.notDispatched === 0), {
    error: 'outcome "completed" needs failed = 0 and notDispatched = 0',
    path: ['outcome'],
  })
  .meta({ id: 'GroupEndLine', description: 'A group barrier settled. Rule: outcome completed needs failed = 0 and notDispatched = 0.' })

const toolAttempt = {
  toolCallId: nonEmpty,
  tool: nonEmpty,
  attempt: z.int().min(1),
  maxAttempts: z.int().min(1),
}

/**
 * Where a tool call sits: a call the workflow script made has an `ordinal` in
 * the group tree (shared with agent calls, so replay matches it by position);
 * a call a child agent made during its turn has `parentCallId` instead, the
 * agent attempt it belongs to, and never takes a position of its own.
 */
const toolPlace = {
  ordinal: nonEmpty.optional().describe("Position of a script's own tool call in the group tree; absent on a child's tool call."),
  parentCallId: nonEmpty.optional().describe('The agent attempt (callId) whose child made this tool call.'),
}

/** `tool_start`: one attempt of a `tool()` call began. Tools number attempts with `attempt`/`maxAttempts`. */
export const ToolStartLineSchema = z
  .object({
    ...common,
    type: z.literal('tool_start'),
    ...toolAttempt,
    ...callPlace,
    ...toolPlace,
    requestKey: z.string().optional().describe('Canonical request key of the call (tool name and detached arguments), used by replay.'),
    args: JsonValueSchema.optional().describe('The detached arguments, so a divergence can name what changed.'),
    timeoutMs: z.number().positive().optional().describe("The attempt's deadline, in milliseconds after it started (the retry policy's timeout_secs); absent when it may take as long as it needs."),
  })
  .meta({ id: 'ToolStartLine' })

/** `tool_end`: one tool attempt settled. */
export const ToolEndLineSchema = z
  .object({
    ...common,
    type: z.literal('tool_end'),
    ...toolAttempt,
    ...callPlace,
    ...toolPlace,
    status: z.enum(TOOL_STATUSES),
    failure: z
      .object({ error: z.string(), retryable: z.boolean(), code: ErrorCodeSchema.optional() })
      .optional()
      .describe('Set when the attempt failed or timed out.'),
    result: JsonValueSchema.optional().describe(
      'The detached result of a completed attempt, so resume and replay serve the call from the journal instead of running it again.',
    ),
    replayed: z.boolean().optional().describe('True when the result came from a recording.'),
    durationMs: duration,
    retryRefused: RetryRefusedSchema.optional().describe('Set when the policy would have retried this attempt but the run refused the retry.'),
  })
  .meta({ id: 'ToolEndLine' })

/** `budget_change`: a budget was set or changed, e.g. a per-call value overriding the run's. */
export const BudgetChangeLineSchema = z
  .object({
    ...common,
    type: z.literal('budget_change'),
    budget: nonEmpty,
    scope: z.enum(['run', 'call']),
    from: z.number().nullable(),
    to: z.number().nullable(),
    callId: nonEmpty.optional(),
    reason: z.string().optional(),
  })
  .meta({ id: 'BudgetChangeLine' })

/** `replay_diverged`: the one-way replay latch tripped; every later call runs live. */
export const ReplayDivergedLineSchema = z
  .object({
    ...common,
    type: z.literal('replay_diverged'),
    ordinal: nonEmpty,
    expectedKey: z.string(),
    actualKey: z.string(),
    fields: z.array(z.string()).describe('Request fields that differ.'),
  })
  .meta({ id: 'ReplayDivergedLine' })

/** `log`: a line the workflow script logged. */
export const LogLineSchema = z
  .object({
    ...common,
    type: z.literal('log'),
    level: z.enum(LOG_LEVELS),
    message: z.string(),
    data: JsonValueSchema.optional(),
    label: z.string().optional(),
    phase: z.string().optional(),
  })
  .meta({ id: 'LogLine' })

/**
 * `llm_attempt`: one physical attempt of one LLM request a host made inside
 * an agent attempt (`callId`, with the agent attempt trio). `llmAttempt` of
 * `llmMaxAttempts` counts the host's own retries under the role's policy,
 * apart from the agent call's transport attempts.
 */
export const LlmAttemptLineSchema = z
  .object({
    ...common,
    type: z.literal('llm_attempt'),
    callId: nonEmpty,
    logicalCallId: nonEmpty,
    attempt: z.int().min(1).describe('The agent attempt this LLM request belongs to.'),
    attempts: z.int().min(1),
    agent: nonEmpty,
    model: z.string(),
    turn: z.int().min(1).describe('Which prompt of the child session: 2 is a clarification turn.'),
    step: z.int().min(1).describe('Which LLM request of the turn: a tool round trip takes several.'),
    llmAttempt: z.int().min(1),
    llmMaxAttempts: z.int().min(1),
    outcome: z.enum(['succeeded', 'failed', 'timed-out', 'cancelled']),
    code: ErrorCodeSchema.optional(),
    status: z.int().optional().describe('The HTTP status, when the server answered.'),
    error: z.string().optional(),
    retryable: z.boolean().optional(),
    retryAfterMs: duration.optional(),
    delayBeforeNextMs: duration.optional(),
    durationMs: duration,
    streamed: z.boolean(),
    timeToFirstTokenMs: duration.optional(),
    turnBudget: z.enum(['idle', 'total']).optional().describe('Which bound of the host turn budget ended it.'),
    usage: UsageSchema.optional().describe('Tokens the provider reported for this one request, when it reported them.'),
    cost: CostSchema.optional().describe('What this request cost, when the run prices requests and the provider reported usage.'),
  })
  .refine((line) => line.attempt <= line.attempts && line.llmAttempt <= line.llmMaxAttempts, {
    error: 'attempt <= attempts and llmAttempt <= llmMaxAttempts must hold',
    path: ['llmAttempt'],
  })
  .meta({ id: 'LlmAttemptLine' })

/** Which surface settled a deferral: HTTP (`api`), the inspector (`ui`), `locus resolve` (`cli`), a pre-signed URL (`callback`), code in the process (`host`). */
export const DECISION_VIAS = ['api', 'ui', 'cli', 'callback', 'host'] as const
export type DecisionVia = (typeof DECISION_VIAS)[number]

/**
 * What a deferred tool does when its deadline passes with no answer
 * (`onTimeout`): fail the call (`'reject'`), complete it with a value checked
 * against the tool's output schema (`{ default }`), or open a new deferral for
 * the named party (`{ escalate: { to, after } }`, `after` being how long that
 * party has, as `sleep()` takes a duration; past it the call fails).
 */
export const OnTimeoutPolicySchema = z
  .union([
    z.literal('reject'),
    z.object({ default: JsonValueSchema }),
    z.object({ escalate: z.object({ to: nonEmpty.describe('Who the new deferral is for.'), after: z.union([nonEmpty, z.number().min(0)]).optional().describe('How long they have: a duration (`30m`, `2h`) or milliseconds; absent to wait as long as it takes.') }) }),
  ])
  .meta({ id: 'OnTimeoutPolicy' })
export type OnTimeoutPolicyJson = z.output<typeof OnTimeoutPolicySchema>

/**
 * `deferred_open`: a deferred tool call is waiting for an answer from outside
 * the run (a person, another system). Written before the id is shown to
 * anyone, so an answer always finds its deferral. `expiresAt` is the
 * attempt's deadline, or null to wait as long as it takes; `onTimeout` what
 * happens then. An escalation's deferral names its party (`to`) and the
 * deferral it replaced (`escalatedFrom`).
 */
export const DeferredOpenLineSchema = z
  .object({
    ...common,
    type: z.literal('deferred_open'),
    deferredId: nonEmpty,
    toolCallId: nonEmpty,
    tool: nonEmpty,
    attempt: z.int().min(1),
    args: JsonValueSchema.optional(),
    expiresAt: z.iso.datetime({ offset: true }).nullable(),
    onTimeout: OnTimeoutPolicySchema.optional().describe("What the deadline does (the tool's `onTimeout`); absent for a deferral that fails its attempt as a timeout."),
    to: nonEmpty.optional().describe('The party an escalation is for.'),
    escalatedFrom: nonEmpty.optional().describe('The deferral whose deadline opened this one.'),
  })
  .meta({ id: 'DeferredOpenLine' })

/**
 * `deferred_settled`: a deferral was answered (`resolved` with a result,
 * `rejected` with the seed's error), expired (with the `result` an
 * `onTimeout: { default }` completed the call with), `escalated` (its deadline
 * opened another deferral) or cancelled. An answer names who gave it
 * (`decidedBy`) and through which surface (`via`).
 */
export const DeferredSettledLineSchema = z
  .object({
    ...common,
    type: z.literal('deferred_settled'),
    deferredId: nonEmpty,
    outcome: z.enum(['resolved', 'rejected', 'expired', 'escalated', 'cancelled']),
    result: JsonValueSchema.optional(),
    error: z.object({ error: z.string(), retryable: z.boolean(), code: ErrorCodeSchema.optional() }).optional(),
    decidedBy: nonEmpty.optional().describe("Who answered: an API key's name or `anonymous`, the inspector's signed-in key, `cli`, `callback`, `host`..."),
    via: z.enum(DECISION_VIAS).optional().describe('Through which surface the answer came.'),
  })
  .meta({ id: 'DeferredSettledLine' })

/**
 * `deferred_expired`: a deferral's deadline passed with no answer and its
 * `policy` (the tool's `onTimeout`) was `applied`: the call failed
 * (`rejected`), completed with the default (`default`, with its `result`), or
 * went to another party (`escalated`, with the new deferral `escalatedTo` and
 * its party `to`). Written before the deferral's `deferred_settled`, so a
 * resumed run serves the outcome from the journal and never opens it again.
 */
export const DeferredExpiredLineSchema = z
  .object({
    ...common,
    type: z.literal('deferred_expired'),
    deferredId: nonEmpty,
    toolCallId: nonEmpty,
    tool: nonEmpty,
    policy: OnTimeoutPolicySchema,
    applied: z.enum(['rejected', 'default', 'escalated']),
    result: JsonValueSchema.optional().describe('The default the call completed with.'),
    escalatedTo: nonEmpty.optional().describe('The deferral the escalation opened.'),
    to: nonEmpty.optional().describe('Who the escalation is for.'),
  })
  .meta({ id: 'DeferredExpiredLine' })

const childAttempt = {
  childCallId: nonEmpty.describe("The logical spawn in the parent's script, e.g. child-2; shared by its attempts."),
  workflow: nonEmpty.describe('The name of the spawned workflow.'),
  attempt: z.int().min(1),
  maxAttempts: z.int().min(1),
  ordinal: nonEmpty.describe('Position of the spawn in the group tree, shared with agent and tool calls.'),
  childExecutionId: nonEmpty.describe("The child run's own execution: its journal, result.json and outputs live there."),
}

/**
 * `child_start`: one attempt of a `spawn()` (seed `sub_agent.spawn`) began: a
 * child run of a saved workflow, in its own execution of the same stored run.
 */
export const ChildStartLineSchema = z
  .object({
    ...common,
    type: z.literal('child_start'),
    ...childAttempt,
    ...callPlace,
    requestKey: z.string().optional().describe('Canonical request key of the spawn (workflow name and detached input), used by replay.'),
    input: JsonValueSchema.optional().describe("The child's detached input, so a divergence can name what changed."),
  })
  .meta({ id: 'ChildStartLine' })

/**
 * `child_end`: one spawn attempt settled. `disposition` is the child run's own
 * (absent when it never ended, e.g. a timed-out attempt); a child that did not
 * complete, or returned a failure value such as `partial: true`, fails the spawn.
 */
export const ChildEndLineSchema = z
  .object({
    ...common,
    type: z.literal('child_end'),
    ...childAttempt,
    ...callPlace,
    status: z.enum(TOOL_STATUSES),
    disposition: RunDispositionSchema.optional().describe("The child run's disposition, as its own run_end records it."),
    result: JsonValueSchema.optional().describe("The child's detached result (or failure envelope), so resume and replay serve a completed spawn from the journal."),
    error: SerializedErrorSchema.optional().describe('What ended the child, when it threw or failed.'),
    failure: z
      .object({ error: z.string(), retryable: z.boolean(), code: ErrorCodeSchema.optional() })
      .optional()
      .describe('The seed-001 failure of the attempt, when it did not complete.'),
    replayed: z.boolean().optional().describe('True when the result came from a recording.'),
    durationMs: duration,
    retryRefused: RetryRefusedSchema.optional().describe('Set when the policy would have retried this attempt but the run refused the retry.'),
    cost: ChildCostSchema.optional().describe("What the child run cost, when the run prices requests and the child ended; absent on a replayed spawn, which cost nothing now."),
  })
  .refine((line) => line.status !== 'completed' || line.disposition === 'completed', {
    error: 'a completed spawn attempt needs the child disposition "completed"',
    path: ['disposition'],
  })
  .meta({ id: 'ChildEndLine', description: 'One spawn attempt settled. Rule: status completed needs disposition completed.' })

const leaseFields = {
  owner: nonEmpty.describe('The worker that holds (or held) the lease.'),
  epoch: z.int().min(1).describe('The lease epoch: one more at every acquisition, and every append is fenced by it.'),
}

/** `lease_acquired`: a worker took the run's lease at `epoch` and is now its only writer. */
export const LeaseAcquiredLineSchema = z
  .object({ ...common, type: z.literal('lease_acquired'), ...leaseFields, leaseMs: duration.describe('How long the lease lasts without a heartbeat.') })
  .meta({ id: 'LeaseAcquiredLine' })

/** `lease_lost`: the writer at `epoch` learned that the lease moved on; it writes nothing more to the run. */
export const LeaseLostLineSchema = z
  .object({ ...common, type: z.literal('lease_lost'), ...leaseFields, reason: z.enum(['expired', 'taken', 'released']) })
  .meta({ id: 'LeaseLostLine' })

/** `worker_takeover`: a worker resumed a run whose previous owner's lease expired. */
export const WorkerTakeoverLineSchema = z
  .object({
    ...common,
    type: z.literal('worker_takeover'),
    ...leaseFields,
    previousOwner: nonEmpty,
    previousEpoch: z.int().min(1),
  })
  .meta({ id: 'WorkerTakeoverLine' })

/**
 * `run_cancel_requested`: someone asked this execution to stop, before it
 * ended; `run_end` (disposition `cancelled`) follows once started work has
 * settled. `by` says who: an API key's name (`key-…`) or `anonymous` over
 * HTTP, `cli` for Ctrl-C, `worker` for a request that reached a PostgreSQL
 * worker without a name, `host` for code that called `cancel()` itself.
 */
export const RunCancelRequestedLineSchema = z
  .object({
    ...common,
    type: z.literal('run_cancel_requested'),
    reason: z.string().describe('Why, as the requester gave it (or the default of the surface it came through).'),
    by: nonEmpty.describe('Who asked: an API key name or `anonymous`, `server`, `mcp`, `cli`, `worker`, `host`.'),
  })
  .meta({ id: 'RunCancelRequestedLine' })

const timerId = nonEmpty.describe('The timer: `timer-<position>`, the same in every execution of the run, so a resume finds it.')
const isoDate = z.iso.datetime({ offset: true })

/**
 * `timer_start`: a `sleep()` of the script began. `dueAt` is absolute, so a
 * resume waits only for what is left of it. It takes a position in the group
 * tree like any call (`ordinal`, shared with agent and tool calls).
 */
export const TimerStartLineSchema = z
  .object({
    ...common,
    type: z.literal('timer_start'),
    timerId,
    logicalCallId: nonEmpty.describe('The logical sleep() call of the script, `sleep-<position>`.'),
    ordinal: nonEmpty.describe('Position of the sleep in the group tree, shared with agent and tool calls.'),
    dueAt: isoDate.describe('When the timer fires, ISO 8601 on the run clock.'),
    ...callPlace,
    replayed: z.boolean().optional().describe('True when the timer was started by an earlier execution and this one took its dueAt from the journal.'),
  })
  .meta({ id: 'TimerStartLine' })

/** `timer_fired`: a timer's due time came (or had passed when a resume reached it); the sleep returned. */
export const TimerFiredLineSchema = z
  .object({
    ...common,
    type: z.literal('timer_fired'),
    timerId,
    firedAt: isoDate.describe('When the sleep returned, ISO 8601 on the run clock.'),
    lateMs: duration.describe('Milliseconds between dueAt and firedAt: how late the timer fired (a resume after the due time fires at once, late).'),
    replayed: z.boolean().optional().describe('True when an earlier execution fired it and this one served it from the journal.'),
  })
  .meta({ id: 'TimerFiredLine' })

/** Which surface a signal came through: HTTP (`api`), the inspector (`ui`), `locus signal` (`cli`), a pre-signed URL (`callback`), the start request (`start`), code in the process (`host`). */
export const SIGNAL_VIAS = ['api', 'ui', 'cli', 'callback', 'start', 'host'] as const
export type SignalVia = (typeof SIGNAL_VIAS)[number]

const signalSeq = count.describe("The signal's place in the run's mailbox, 0, 1, 2...: the same in every execution, so a resume knows which signals its journal already holds.")
const waitId = nonEmpty.describe('The wait: `signal-wait-<position>`, the same in every execution of the run.')

/**
 * `signal_received`: a signal sent to the run, journaled before any wait or
 * handler of the script sees it, so it replays. One that arrives before its
 * wait or handler exists stays here (buffered) until one takes it.
 */
export const SignalReceivedLineSchema = z
  .object({
    ...common,
    type: z.literal('signal_received'),
    name: nonEmpty.describe('The signal, as the workflow declares it under `signals`.'),
    payload: JsonValueSchema.describe("The payload, as checked against the signal's schema."),
    from: nonEmpty.describe('Who sent it: an API key name or `anonymous`, `cli`, `callback`, `host`...'),
    via: z.enum(SIGNAL_VIAS),
    signalSeq,
  })
  .meta({ id: 'SignalReceivedLine' })

/** `signal_wait_start`: the script began a `waitForSignal(name)` that no received signal answered yet. It takes a position like any call. */
export const SignalWaitStartLineSchema = z
  .object({
    ...common,
    type: z.literal('signal_wait_start'),
    waitId,
    name: nonEmpty,
    ordinal: nonEmpty.describe('Position of the wait in the group tree, shared with agent and tool calls.'),
    dueAt: isoDate.optional().describe('When the wait times out, ISO 8601 on the run clock; absent without a timeout.'),
    ...callPlace,
    replayed: z.boolean().optional(),
  })
  .meta({ id: 'SignalWaitStartLine' })

/** `signal_wait_end`: a `waitForSignal()` returned: with the signal at `signalSeq`, or `timedOut`. */
export const SignalWaitEndLineSchema = z
  .object({
    ...common,
    type: z.literal('signal_wait_end'),
    waitId,
    name: nonEmpty,
    signalSeq: signalSeq.optional(),
    timedOut: z.literal(true).optional(),
    replayed: z.boolean().optional(),
  })
  .meta({ id: 'SignalWaitEndLine' })

const updateId = nonEmpty.describe('The update: `upd_<uuid>`, chosen by the sender, the same in every execution of the run; the sender waits for the line that completes it.')
const updateSeq = count.describe("The update's place in the run's update mailbox, 0, 1, 2...: a resume reads the mailbox from after the last one its journal holds.")

/**
 * `update_received`: an update sent to the run and accepted (its input fit
 * the declared schema and `validate` passed), journaled before its handler
 * runs. One that arrives before its handler exists stays here (buffered)
 * until `onUpdate` registers it; one without an `update_completed` or
 * `update_failed` is run again by a resume.
 */
export const UpdateReceivedLineSchema = z
  .object({
    ...common,
    type: z.literal('update_received'),
    updateId,
    name: nonEmpty.describe('The update, as the workflow declares it under `updates`.'),
    input: JsonValueSchema.describe("The input, as checked against the update's input schema and `validate`."),
    from: nonEmpty.describe('Who sent it: an API key name or `anonymous`, `cli`, `host`...'),
    via: z.enum(SIGNAL_VIAS),
    updateSeq,
  })
  .meta({ id: 'UpdateReceivedLine' })

/** `update_completed`: the update's handler returned `output` (checked against the declared output schema); the sender is answered with it. Never run again. */
export const UpdateCompletedLineSchema = z
  .object({
    ...common,
    type: z.literal('update_completed'),
    updateId,
    name: nonEmpty,
    output: JsonValueSchema.describe("The handler's result, as checked against the update's output schema."),
  })
  .meta({ id: 'UpdateCompletedLine' })

/** `update_failed`: the update's handler threw, or returned a value its output schema refused; the sender is answered with `error`. Never run again. */
export const UpdateFailedLineSchema = z
  .object({
    ...common,
    type: z.literal('update_failed'),
    updateId,
    name: nonEmpty,
    error: nonEmpty.describe("Why: the handler's error message, or the output schema's issues."),
  })
  .meta({ id: 'UpdateFailedLine' })
/**
 * `queued`: the run waited before it started, right after its `run_start`:
 * for a concurrency slot of one of its `keys`, for a rate limit, or behind
 * runs of its key with a higher priority or queued earlier. The wait spent no
 * attempt, retry or invocation.
 */
export const QueuedLineSchema = z
  .object({
    ...common,
    type: z.literal('queued'),
    keys: z.array(z.string()).describe('The concurrency keys the run holds a slot of.'),
    reason: z.enum(['concurrency', 'rate', 'priority']).describe('What it waited for.'),
    waitedMs: duration.describe('Milliseconds from its enqueue to its start.'),
  })
  .meta({ id: 'QueuedLine' })

/** `rate_wait`: an LLM request waited for a shared rate limit (or a provider's `Retry-After`) before it was sent. */
export const RateWaitLineSchema = z
  .object({
    ...common,
    type: z.literal('rate_wait'),
    limit: nonEmpty.describe('The limit waited on: `provider/model` of its match, with `rpm`, `tpm` or `retry-after`.'),
    waitedMs: duration.describe('Milliseconds the request waited.'),
    callId: z.string().optional().describe('The agent attempt whose request waited.'),
  })
  .meta({ id: 'RateWaitLine' })

/** Any journal line, discriminated by `type`. This schema is the contract; the reader's fast path agrees with it. */
export const JournalLineSchema = z
  .discriminatedUnion('type', [
    RunStartLineSchema,
    RunEndLineSchema,
    AgentStartLineSchema,
    AgentEndLineSchema,
    ErrorLineSchema,
    RetryLineSchema,
    GroupStartLineSchema,
    GroupEndLineSchema,
    ToolStartLineSchema,
    ToolEndLineSchema,
    BudgetChangeLineSchema,
    ReplayDivergedLineSchema,
    LogLineSchema,
    LlmAttemptLineSchema,
    DeferredOpenLineSchema,
    DeferredSettledLineSchema,
    DeferredExpiredLineSchema,
    ChildStartLineSchema,
    ChildEndLineSchema,
    LeaseAcquiredLineSchema,
    LeaseLostLineSchema,
    WorkerTakeoverLineSchema,
    RunCancelRequestedLineSchema,
    TimerStartLineSchema,
    TimerFiredLineSchema,
    SignalReceivedLineSchema,
    SignalWaitStartLineSchema,
    SignalWaitEndLineSchema,
    UpdateReceivedLineSchema,
    UpdateCompletedLineSchema,
    UpdateFailedLineSchema,
    QueuedLineSchema,
    RateWaitLineSchema,
  ])
  .meta({ id: 'JournalLine' })

export type RunStartLine = z.output<typeof RunStartLineSchema>
export type RunEndLine = z.output<typeof RunEndLineSchema>
export type RunGap = z.output<typeof RunGapSchema>
export type AgentStartLine = z.output<typeof AgentStartLineSchema>
export type AgentEndLine = z.output<typeof AgentEndLineSchema>
export type LineCost = z.output<typeof CostSchema>
export type AttemptCost = z.output<typeof AttemptCostSchema>
export type ChildCost = z.output<typeof ChildCostSchema>
export type ErrorLine = z.output<typeof ErrorLineSchema>
export type RetryLine = z.output<typeof RetryLineSchema>
export type GroupStartLine = z.output<typeof GroupStartLineSchema>
export type GroupEndLine = z.output<typeof GroupEndLineSchema>
export type ToolStartLine = z.output<typeof ToolStartLineSchema>
export type ToolEndLine = z.output<typeof ToolEndLineSchema>
export type BudgetChangeLine = z.output<typeof BudgetChangeLineSchema>
export type ReplayDivergedLine = z.output<typeof ReplayDivergedLineSchema>
export type LogLine = z.output<typeof LogLineSchema>
export type RetryRefused = z.output<typeof RetryRefusedSchema>
export type ChoiceRepair = z.output<typeof ChoiceRepairSchema>
export type LlmAttemptLine = z.output<typeof LlmAttemptLineSchema>
export type DeferredOpenLine = z.output<typeof DeferredOpenLineSchema>
export type DeferredSettledLine = z.output<typeof DeferredSettledLineSchema>
export type DeferredExpiredLine = z.output<typeof DeferredExpiredLineSchema>
export type ChildStartLine = z.output<typeof ChildStartLineSchema>
export type ChildEndLine = z.output<typeof ChildEndLineSchema>
export type LeaseAcquiredLine = z.output<typeof LeaseAcquiredLineSchema>
export type QueuedLine = z.output<typeof QueuedLineSchema>
export type RateWaitLine = z.output<typeof RateWaitLineSchema>
export type LeaseLostLine = z.output<typeof LeaseLostLineSchema>
export type WorkerTakeoverLine = z.output<typeof WorkerTakeoverLineSchema>
export type RunCancelRequestedLine = z.output<typeof RunCancelRequestedLineSchema>
export type TimerStartLine = z.output<typeof TimerStartLineSchema>
export type TimerFiredLine = z.output<typeof TimerFiredLineSchema>
export type SignalReceivedLine = z.output<typeof SignalReceivedLineSchema>
export type SignalWaitStartLine = z.output<typeof SignalWaitStartLineSchema>
export type SignalWaitEndLine = z.output<typeof SignalWaitEndLineSchema>
export type UpdateReceivedLine = z.output<typeof UpdateReceivedLineSchema>
export type UpdateCompletedLine = z.output<typeof UpdateCompletedLineSchema>
export type UpdateFailedLine = z.output<typeof UpdateFailedLineSchema>

/** Any journal line. Narrow on `type`. */
export type JournalLine =
  | RunStartLine
  | RunEndLine
  | AgentStartLine
  | AgentEndLine
  | ErrorLine
  | RetryLine
  | GroupStartLine
  | GroupEndLine
  | ToolStartLine
  | ToolEndLine
  | BudgetChangeLine
  | ReplayDivergedLine
  | LogLine
  | LlmAttemptLine
  | DeferredOpenLine
  | DeferredSettledLine
  | DeferredExpiredLine
  | ChildStartLine
  | ChildEndLine
  | LeaseAcquiredLine
  | LeaseLostLine
  | WorkerTakeoverLine
  | RunCancelRequestedLine
  | TimerStartLine
  | TimerFiredLine
  | SignalReceivedLine
  | SignalWaitStartLine
  | SignalWaitEndLine
  | UpdateReceivedLine
  | UpdateCompletedLine
  | UpdateFailedLine
  | QueuedLine
  | RateWaitLine

/** The fields the writer fills in on every line. */
export type JournalCommonField = 'v' | 'seq' | 'ts' | 'runId' | 'executionId'

type DistributiveOmit<TUnion, TKey extends PropertyKey> = TUnion extends unknown ? Omit<TUnion, TKey> : never

/** A line as a caller passes it to `JournalWriter.append`: everything but the common fields. */
export type JournalLineInput = DistributiveOmit<JournalLine, JournalCommonField>

/** The line of a given type. */
export type JournalLineOf<TType extends JournalLineType> = Extract<JournalLine, { type: TType }>
