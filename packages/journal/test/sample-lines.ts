// Shared test data: one valid line input of every type, and fast-check
// arbitraries of valid lines.
import fc from 'fast-check'
import { FAILURE_CAUSES, ERROR_CODES, type JsonValue } from '@locus/outcome'
import { type JournalLine, type JournalLineInput, type JournalLineType, RETRY_REFUSERS } from '../src/journal-line-schema.js'

export const RUN_ID = 'run-1'
export const EXECUTION_ID = 'run-1'

/** A valid input of every line type, each with its optional fields filled in. */
export const SAMPLE_INPUTS: { [TType in JournalLineType]: Extract<JournalLineInput, { type: TType }> } = {
  run_start: {
    type: 'run_start',
    workflow: 'triage',
    input: { ticket: 'T-1' },
    options: { durability: 'batch', concurrency: 4 },
    parentRunId: 'run-0',
    parentExecutionId: 'run-0',
    parentCallId: 'child-1',
    resumeOf: 'run-0',
  },
  child_start: {
    type: 'child_start',
    childCallId: 'child-g1.0.1',
    workflow: 'enrich',
    attempt: 1,
    maxAttempts: 2,
    ordinal: 'g1[0].1',
    childExecutionId: 'child-g1.0.1-a1',
    label: 'enrich',
    phase: 'gather',
    groupId: 'g1',
    requestKey: 'sha256:abc',
    input: { ticket: 'T-1' },
  },
  child_end: {
    type: 'child_end',
    childCallId: 'child-g1.0.1',
    workflow: 'enrich',
    attempt: 1,
    maxAttempts: 2,
    ordinal: 'g1[0].1',
    childExecutionId: 'child-g1.0.1-a1',
    label: 'enrich',
    phase: 'gather',
    groupId: 'g1',
    status: 'failed',
    disposition: 'failed',
    result: { ok: false, partial: true },
    error: { name: 'AgentCallError', code: 'AGENT_CALL_FAILED', message: 'no answer' },
    failure: { error: 'the child run failed', retryable: true },
    replayed: false,
    durationMs: 30,
    retryRefused: { by: 'retry-budget' },
  },
  llm_attempt: {
    type: 'llm_attempt',
    callId: 'call-1',
    logicalCallId: 'lc-1',
    attempt: 1,
    attempts: 2,
    agent: 'analyst',
    model: 'llama3.2',
    turn: 1,
    step: 1,
    llmAttempt: 1,
    llmMaxAttempts: 3,
    outcome: 'failed',
    code: 'rate_limited',
    status: 429,
    error: 'Too Many Requests',
    retryable: true,
    retryAfterMs: 2000,
    delayBeforeNextMs: 2000,
    durationMs: 120,
    streamed: true,
    timeToFirstTokenMs: 40,
    turnBudget: 'idle',
    usage: { inputTokens: 310, outputTokens: 0 },
  },
  deferred_open: {
    type: 'deferred_open',
    deferredId: 'tool-1-a1',
    toolCallId: 'tool-1',
    tool: 'approve',
    attempt: 1,
    args: { amount: 42 },
    expiresAt: '2026-12-03T06:00:30.000Z',
  },
  deferred_settled: {
    type: 'deferred_settled',
    deferredId: 'tool-1-a1',
    outcome: 'resolved',
    result: { approved: true },
    decidedBy: 'ops-key',
    via: 'api',
  },
  deferred_expired: {
    type: 'deferred_expired',
    deferredId: 'tool-1-a1',
    toolCallId: 'tool-1',
    tool: 'approve',
    policy: { escalate: { to: 'manager', after: '2h' } },
    applied: 'escalated',
    escalatedTo: 'tool-1-a1-escalated',
    to: 'manager',
  },
  run_end: {
    type: 'run_end',
    disposition: 'failed',
    ok: false,
    result: { ok: false, partial: true },
    error: { name: 'WorkflowGroupFailureError', code: 'WORKFLOW_GROUP_FAILURE', message: '1 of 2 failed', data: { total: 2 } },
    durationMs: 1234,
    answerOutcome: 'partial',
    gaps: [{ tool: 'get_payments', criticality: 'enriching', reason: 'timeout' }],
    caveats: ['Could not check the payment history.'],
  },
  agent_start: {
    type: 'agent_start',
    callId: 'call-1',
    logicalCallId: 'lc-1',
    attempt: 1,
    attempts: 2,
    agent: 'analyst',
    label: 'summarise',
    phase: 'gather',
    groupId: 'g1',
    ordinal: 'g1[0].1',
    requestKey: 'sha256:abc',
    timeoutMs: 60_000,
    prompt: 'Summarise the ticket',
  },
  agent_end: {
    type: 'agent_end',
    callId: 'call-1',
    logicalCallId: 'lc-1',
    attempt: 1,
    attempts: 2,
    agent: 'analyst',
    label: 'summarise',
    phase: 'gather',
    groupId: 'g1',
    ordinal: 'g1[0].1',
    status: 'failed',
    failureCause: 'call-timeout',
    reason: 'the call timed out after 60 s',
    stopReason: 'aborted',
    durationMs: 60_000,
    usage: { inputTokens: 120, outputTokens: 0 },
    replayed: false,
  },
  error: {
    type: 'error',
    message: 'Agent SDK unavailable',
    error: {
      name: 'AgentCallError',
      code: 'AGENT_CALL_FAILED',
      message: 'Agent SDK unavailable',
      cause: { name: 'Error', code: 'ENOENT', message: 'no sdk' },
    },
    failureCause: 'sdk-unavailable',
    callId: 'call-2',
    agent: 'analyst',
    ordinal: 'g1[0].1',
    label: 'summarise',
    phase: 'gather',
    groupId: 'g1',
    attempt: 2,
    attempts: 2,
    logicalCallId: 'lc-1',
  },
  retry: {
    type: 'retry',
    kind: 'agent',
    message: '[workflow:retry] lc-1 attempt 1/2 failed with call-timeout; retrying',
    logicalCallId: 'lc-1',
    callId: 'call-1',
    fromAttempt: 1,
    toAttempt: 2,
    attempts: 2,
    cause: 'call-timeout',
    delayMs: 0,
  },
  group_start: {
    type: 'group_start',
    groupId: 'g1',
    groupKind: 'parallel',
    total: 2,
    parentGroupId: 'g0',
    label: 'fan out',
    phase: 'gather',
    concurrency: 2,
  },
  group_end: {
    type: 'group_end',
    groupId: 'g1',
    groupKind: 'pipeline',
    total: 2,
    completed: 1,
    failed: 1,
    notDispatched: 0,
    outcome: 'failed',
    stageIndex: 1,
  },
  tool_start: {
    type: 'tool_start',
    toolCallId: 'tool-1',
    tool: 'lookup',
    attempt: 1,
    maxAttempts: 3,
    label: 'facts',
    groupId: 'g1',
    phase: 'gather',
    ordinal: 'g1[0].1',
    parentCallId: 'call-1-a1',
    requestKey: 'sha256:abc',
    args: { id: 'T-1' },
  },
  tool_end: {
    type: 'tool_end',
    toolCallId: 'tool-1',
    tool: 'lookup',
    attempt: 1,
    maxAttempts: 3,
    label: 'facts',
    groupId: 'g1',
    phase: 'gather',
    status: 'failed',
    ordinal: 'g1[0].1',
    parentCallId: 'call-1-a1',
    failure: { error: 'upstream 503', retryable: true, code: 'provider_error' },
    result: { rows: 3 },
    replayed: false,
    durationMs: 12,
  },
  budget_change: { type: 'budget_change', budget: 'timeoutMs', scope: 'call', from: 30_000, to: 60_000, callId: 'call-1', reason: 'per-call override' },
  replay_diverged: { type: 'replay_diverged', ordinal: 'g1[1].1', expectedKey: 'sha256:a', actualKey: 'sha256:b', fields: ['prompt'] },
  log: { type: 'log', level: 'warn', message: 'slow upstream', data: { ms: 900 }, label: 'facts', phase: 'gather' },
  lease_acquired: { type: 'lease_acquired', owner: 'worker-a', epoch: 2, leaseMs: 5000 },
  lease_lost: { type: 'lease_lost', owner: 'worker-a', epoch: 2, reason: 'taken' },
  worker_takeover: { type: 'worker_takeover', owner: 'worker-b', epoch: 3, previousOwner: 'worker-a', previousEpoch: 2 },
  run_cancel_requested: { type: 'run_cancel_requested', reason: 'the operator stopped it', by: 'key-1a2b3c4d' },
  timer_start: { type: 'timer_start', timerId: 'timer-2', logicalCallId: 'sleep-2', ordinal: '2', dueAt: '2026-03-01T00:00:02.000Z', label: 'cool-off' },
  timer_fired: { type: 'timer_fired', timerId: 'timer-2', firedAt: '2026-03-01T00:00:02.250Z', lateMs: 250 },
  signal_received: { type: 'signal_received', name: 'approve', payload: { ok: true }, from: 'ops-key', via: 'api', signalSeq: 0 },
  signal_wait_start: { type: 'signal_wait_start', waitId: 'signal-wait-3', name: 'approve', ordinal: '3', dueAt: '2026-03-01T00:01:00.000Z' },
  signal_wait_end: { type: 'signal_wait_end', waitId: 'signal-wait-3', name: 'approve', signalSeq: 0 },
  update_received: { type: 'update_received', updateId: 'upd_1', name: 'addItem', input: { sku: 'a-1' }, from: 'ops-key', via: 'api', updateSeq: 0 },
  update_completed: { type: 'update_completed', updateId: 'upd_1', name: 'addItem', output: { count: 1 } },
  update_failed: { type: 'update_failed', updateId: 'upd_2', name: 'addItem', error: 'the cart is closed' },
  queued: { type: 'queued', keys: ['tenant:acme', 'global'], reason: 'concurrency', waitedMs: 1200 },
  rate_wait: { type: 'rate_wait', limit: 'openai/gpt-4o rpm', waitedMs: 800, callId: 'call-1' },
}

/** Stamps an input with the common fields, as the writer would. */
export function stamp(input: JournalLineInput, seq: number, ts = '2026-09-22T16:21:00.000Z'): JournalLine {
  return { v: 1, seq, ts, runId: RUN_ID, executionId: EXECUTION_ID, ...input }
}

const id = fc.stringMatching(/^[a-z][a-z0-9-]{0,11}$/)
const text = fc.string({ maxLength: 30 })
const count = fc.nat({ max: 1000 })
const duration = fc.oneof(fc.nat({ max: 100_000 }), fc.double({ min: 0, max: 1e6, noNaN: true }))
// zod's JSON schema drops own `__proto__` keys; that case has its own test, so generated payloads leave it out.
const json: fc.Arbitrary<JsonValue> = fc
  .jsonValue({ maxDepth: 3 })
  .map((value) => JSON.parse(JSON.stringify(value)) as JsonValue)
  .filter((value) => !JSON.stringify(value).includes('__proto__'))
const cause = fc.constantFrom(...FAILURE_CAUSES)
const onTimeout = fc.oneof(
  fc.constant('reject' as const),
  json.map((value) => ({ default: value })),
  fc.record({ to: id, after: fc.option(fc.oneof(fc.constantFrom('30m', '2h'), fc.nat({ max: 100_000 })), { nil: undefined }) }).map((escalate) => ({ escalate })),
)
const timestamp = fc
  .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T23:59:59Z'), noInvalidDate: true })
  .map((date) => date.toISOString())

const place = { label: fc.option(text, { nil: undefined }), phase: fc.option(text, { nil: undefined }), groupId: fc.option(id, { nil: undefined }) }
const trio = fc
  .tuple(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 4 }), id)
  .map(([attempt, extra, logicalCallId]) => ({ attempt, attempts: attempt + extra, logicalCallId }))

const retryRefused = fc.option(fc.record({ by: fc.constantFrom(...RETRY_REFUSERS), delayMs: duration }, { requiredKeys: ['by'] }), { nil: undefined })

const serializedError = fc.record(
  { name: id, code: id, message: text, cause: fc.option(fc.oneof(fc.string(), fc.integer(), fc.record({ name: id, code: id, message: text })), { nil: undefined }) },
  { requiredKeys: ['name', 'code', 'message'] },
)

/** Drops keys whose value is `undefined`, as JSON would. */
function compact<TValue extends object>(value: TValue): TValue {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as TValue
}

/** Valid line inputs of every type. */
export const lineInputArbitrary: fc.Arbitrary<JournalLineInput> = fc.oneof(
  fc.record({ type: fc.constant('run_start' as const), workflow: id, input: json, options: json, parentRunId: fc.option(id, { nil: undefined }) }),
  fc
    .tuple(fc.constantFrom('completed', 'failed', 'cancelled' as const), json, duration)
    .map(([disposition, result, durationMs]) => ({ type: 'run_end' as const, disposition, ok: disposition === 'completed', result, durationMs })),
  fc
    .record({ callId: id, agent: id, ordinal: id, prompt: text, trio, ...place, timeoutMs: fc.option(fc.integer({ min: 1, max: 100_000 }), { nil: undefined }) })
    .map(({ trio: fields, ...rest }) => ({ type: 'agent_start' as const, ...rest, ...fields })),
  fc
    .record({ callId: id, agent: id, ordinal: id, trio, ...place, failed: fc.boolean(), cause, durationMs: duration, usage: fc.option(fc.record({ inputTokens: count, outputTokens: count }), { nil: undefined }), answer: fc.option(fc.jsonValue(), { nil: undefined }), retryRefused })
    .map(({ trio: fields, failed, cause: failureCause, answer, ...rest }) => ({
      type: 'agent_end' as const,
      ...rest,
      ...fields,
      status: failed ? ('failed' as const) : ('completed' as const),
      failureCause: failed ? failureCause : undefined,
      answer: failed ? undefined : answer,
    })),
  fc
    .record({ message: text, error: serializedError, withTrio: fc.boolean(), trio, callId: fc.option(id, { nil: undefined }), failureCause: fc.option(cause, { nil: undefined }) })
    .map(({ withTrio, trio: fields, ...rest }) => ({ type: 'error' as const, ...rest, ...(withTrio ? fields : {}) })),
  fc
    .tuple(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 0, max: 3 }), id, fc.constantFrom('agent', 'tool', 'child' as const), cause)
    .map(([fromAttempt, extra, callId, kind, retryCause]) => ({
      type: 'retry' as const,
      kind,
      message: `[workflow:retry] ${callId}`,
      callId,
      fromAttempt,
      toAttempt: fromAttempt + 1,
      attempts: fromAttempt + 1 + extra,
      cause: retryCause,
    })),
  fc.record({ type: fc.constant('group_start' as const), groupId: id, groupKind: fc.constantFrom('parallel', 'pipeline' as const), total: count }),
  fc
    .tuple(id, count, count, count, fc.constantFrom('failed', 'hard-stopped', 'cancelled' as const))
    .map(([groupId, completed, failed, notDispatched, outcome]) => ({
      type: 'group_end' as const,
      groupId,
      groupKind: 'parallel' as const,
      total: completed + failed + notDispatched,
      completed,
      failed,
      notDispatched,
      outcome: failed + notDispatched === 0 ? ('completed' as const) : outcome,
    })),
  fc.record({ type: fc.constant('tool_start' as const), toolCallId: id, tool: id, attempt: fc.integer({ min: 1, max: 3 }), maxAttempts: fc.integer({ min: 3, max: 5 }) }),
  fc.record({
    type: fc.constant('tool_end' as const),
    toolCallId: id,
    tool: id,
    attempt: fc.integer({ min: 1, max: 3 }),
    maxAttempts: fc.integer({ min: 3, max: 5 }),
    status: fc.constantFrom('completed', 'failed', 'timed-out' as const),
    failure: fc.option(fc.record({ error: text, retryable: fc.boolean(), code: fc.option(fc.constantFrom(...ERROR_CODES), { nil: undefined }) }), { nil: undefined }),
    durationMs: duration,
    retryRefused,
  }),
  fc.record({ type: fc.constant('child_start' as const), childCallId: id, workflow: id, attempt: fc.integer({ min: 1, max: 3 }), maxAttempts: fc.integer({ min: 3, max: 5 }), ordinal: id, childExecutionId: id, ...place, input: fc.option(json, { nil: undefined }) }),
  fc
    .record({
      childCallId: id,
      workflow: id,
      attempt: fc.integer({ min: 1, max: 3 }),
      maxAttempts: fc.integer({ min: 3, max: 5 }),
      ordinal: id,
      childExecutionId: id,
      status: fc.constantFrom('completed', 'failed', 'timed-out' as const),
      disposition: fc.option(fc.constantFrom('failed', 'cancelled' as const), { nil: undefined }),
      result: fc.option(json, { nil: undefined }),
      durationMs: duration,
      retryRefused,
    })
    .map(({ status, disposition, ...rest }) => ({ type: 'child_end' as const, ...rest, status, disposition: status === 'completed' ? ('completed' as const) : disposition })),
  fc.record({ type: fc.constant('budget_change' as const), budget: id, scope: fc.constantFrom('run', 'call' as const), from: fc.option(count, { nil: null }), to: fc.option(count, { nil: null }) }),
  fc.record({ type: fc.constant('replay_diverged' as const), ordinal: id, expectedKey: text, actualKey: text, fields: fc.array(id, { maxLength: 3 }) }),
  fc.record({ type: fc.constant('lease_acquired' as const), owner: id, epoch: fc.integer({ min: 1, max: 1000 }), leaseMs: duration }),
  fc.record({ type: fc.constant('lease_lost' as const), owner: id, epoch: fc.integer({ min: 1, max: 1000 }), reason: fc.constantFrom('expired', 'taken', 'released' as const) }),
  fc.record({ type: fc.constant('worker_takeover' as const), owner: id, epoch: fc.integer({ min: 1, max: 1000 }), previousOwner: id, previousEpoch: fc.integer({ min: 1, max: 1000 }) }),
  fc.record({ type: fc.constant('run_cancel_requested' as const), reason: text, by: id }),
  fc.record({ type: fc.constant('log' as const), level: fc.constantFrom('info', 'warn', 'error' as const), message: text, data: fc.option(json, { nil: undefined }) }),
  fc.record({
    type: fc.constant('timer_start' as const),
    timerId: id,
    logicalCallId: id,
    ordinal: id,
    dueAt: fc.integer({ min: 0, max: 4_102_444_800_000 }).map((ms) => new Date(ms).toISOString()),
    replayed: fc.option(fc.boolean(), { nil: undefined }),
  }),
  fc.record({
    type: fc.constant('timer_fired' as const),
    timerId: id,
    firedAt: fc.integer({ min: 0, max: 4_102_444_800_000 }).map((ms) => new Date(ms).toISOString()),
    lateMs: duration,
    replayed: fc.option(fc.boolean(), { nil: undefined }),
  }),
  fc.record({
    type: fc.constant('deferred_open' as const),
    deferredId: id,
    toolCallId: id,
    tool: id,
    attempt: fc.integer({ min: 1, max: 3 }),
    expiresAt: fc.constant(null),
    onTimeout: fc.option(onTimeout, { nil: undefined }),
    to: fc.option(id, { nil: undefined }),
    escalatedFrom: fc.option(id, { nil: undefined }),
  }),
  fc.record({
    type: fc.constant('deferred_settled' as const),
    deferredId: id,
    outcome: fc.constantFrom('resolved', 'rejected', 'expired', 'escalated', 'cancelled' as const),
    result: fc.option(json, { nil: undefined }),
    decidedBy: fc.option(id, { nil: undefined }),
    via: fc.option(fc.constantFrom('api', 'ui', 'cli', 'callback', 'host' as const), { nil: undefined }),
  }),
  fc.record({
    type: fc.constant('deferred_expired' as const),
    deferredId: id,
    toolCallId: id,
    tool: id,
    policy: onTimeout,
    applied: fc.constantFrom('rejected', 'default', 'escalated' as const),
    result: fc.option(json, { nil: undefined }),
    escalatedTo: fc.option(id, { nil: undefined }),
    to: fc.option(id, { nil: undefined }),
  }),
  fc.record({ type: fc.constant('signal_received' as const), name: id, payload: json, from: id, via: fc.constantFrom('api', 'ui', 'cli', 'callback', 'start', 'host' as const), signalSeq: fc.nat() }),
  fc.record({
    type: fc.constant('signal_wait_end' as const),
    waitId: id,
    name: id,
    signalSeq: fc.option(fc.nat(), { nil: undefined }),
    timedOut: fc.option(fc.constant(true as const), { nil: undefined }),
  }),
  fc.record({ type: fc.constant('update_received' as const), updateId: id, name: id, input: json, from: id, via: fc.constantFrom('api', 'ui', 'cli', 'callback', 'start', 'host' as const), updateSeq: fc.nat() }),
  fc.record({ type: fc.constant('update_completed' as const), updateId: id, name: id, output: json }),
  fc.record({ type: fc.constant('update_failed' as const), updateId: id, name: id, error: id }),
  fc.record({
    type: fc.constant('queued' as const),
    keys: fc.array(id, { maxLength: 3 }),
    reason: fc.constantFrom('concurrency' as const, 'rate' as const, 'priority' as const),
    waitedMs: duration,
  }),
  fc.record({
    type: fc.constant('rate_wait' as const),
    limit: id,
    waitedMs: duration,
    callId: fc.option(id, { nil: undefined }),
  }),
).map((input) => compactDeep(input) as JournalLineInput)

function compactDeep(value: object): object {
  const out = compact(value) as Record<string, unknown>
  for (const [key, field] of Object.entries(out)) {
    if (key !== 'input' && key !== 'options' && key !== 'result' && key !== 'data' && typeof field === 'object' && field !== null && !Array.isArray(field)) {
      out[key] = compactDeep(field)
    }
  }
  return out
}

/** Valid complete lines (common fields stamped). */
export const lineArbitrary: fc.Arbitrary<JournalLine> = fc
  .tuple(lineInputArbitrary, fc.nat({ max: 1_000_000 }), timestamp)
  .map(([input, seq, ts]) => stamp(input, seq, ts))
