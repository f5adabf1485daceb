// A precompiled check per line type that agrees with the zod schemas in
// journal-line-schema.ts but costs a fraction of a zod parse. It only ever
// says "valid as it stands": any value it does not accept goes to zod, which
// stays the contract and produces the error message. A property test holds it
// to that: whatever this accepts, zod accepts and returns unchanged.
import { ANSWER_OUTCOMES, FAILURE_CAUSES, ERROR_CODES, RUN_DISPOSITIONS, STEP_CRITICALITIES } from '@locus/outcome'
import { z } from 'zod'
import { DECISION_VIAS, JOURNAL_SCHEMA_VERSION, RETRY_MESSAGE_PREFIX, RETRY_REFUSERS, SIGNAL_VIAS } from './journal-line-schema.js'

type Check = (value: unknown, trustedJson: boolean) => boolean
type Shape = Readonly<Record<string, Check>>
type Refinement = (line: Record<string, unknown>) => boolean

const ISO_DATETIME = z.core.regexes.datetime({ offset: true })

const isString: Check = (value) => typeof value === 'string'
const isNonEmpty: Check = (value) => typeof value === 'string' && value.length > 0
const isBoolean: Check = (value) => typeof value === 'boolean'
const isCount: Check = (value) => Number.isSafeInteger(value) && (value as number) >= 0
const isDuration: Check = (value) => typeof value === 'number' && Number.isFinite(value) && value >= 0
const isTimestamp: Check = (value) => typeof value === 'string' && ISO_DATETIME.test(value)
const isNumberOrNull: Check = (value) => value === null || (typeof value === 'number' && Number.isFinite(value))

function intAtLeast(minimum: number): Check {
  return (value) => Number.isSafeInteger(value) && (value as number) >= minimum
}

function oneOf(values: readonly unknown[]): Check {
  const allowed = new Set(values)
  return (value) => allowed.has(value)
}

/** Optional checks are marked so that `object()` can skip them for absent fields without a call. */
const OPTIONAL = new WeakSet<Check>()

function optional(check: Check): Check {
  const wrapped: Check = (value, trustedJson) => value === undefined || check(value, trustedJson)
  OPTIONAL.add(wrapped)
  return wrapped
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const prototype = Object.getPrototypeOf(value) as unknown
  return prototype === Object.prototype || prototype === null
}

/** True for a value JSON.stringify writes unchanged and zod's `z.json()` accepts as it is. */
function isJsonDeep(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true
    case 'number':
      return Number.isFinite(value)
    case 'object': {
      if (value === null) return true
      if (Array.isArray(value)) {
        for (const element of value) if (!isJsonDeep(element)) return false
        return true
      }
      if (!isPlainObject(value) || Object.hasOwn(value, '__proto__')) return false
      for (const key in value) if (!isJsonDeep(value[key])) return false
      return true
    }
    default:
      return false
  }
}

/** Values straight from JSON.parse are JSON by construction; values from a caller are checked in depth. */
const isJson: Check = (value, trustedJson) => (trustedJson ? value !== undefined : isJsonDeep(value))

/** An object with exactly the known keys (a present key holding `undefined` counts as absent). */
function object(shape: Shape, refinements: readonly Refinement[] = []): Check {
  const keys = Object.keys(shape)
  const checks = keys.map((key) => shape[key] as Check)
  const required = checks.map((check) => !OPTIONAL.has(check))
  const fieldCount = keys.length
  return (value, trustedJson) => {
    if (!isPlainObject(value)) return false
    let known = 0
    for (let index = 0; index < fieldCount; index += 1) {
      const field = value[keys[index] as string]
      if (field === undefined) {
        if (required[index] === true) return false
        continue
      }
      if (!(checks[index] as Check)(field, trustedJson)) return false
      known += 1
    }
    // Unknown keys are stripped by zod; leave such a line to zod so the output matches.
    if (!hasOnlyKnownKeys(value, known, trustedJson)) return false
    for (const refinement of refinements) if (!refinement(value)) return false
    return true
  }
}

/** JSON.parse never yields `undefined` values, so a key count is enough; a caller's object may hold explicit `undefined`s. */
function hasOnlyKnownKeys(value: Record<string, unknown>, known: number, trustedJson: boolean): boolean {
  if (trustedJson) return Object.keys(value).length === known
  let present = 0
  for (const key in value) if (value[key] !== undefined) present += 1
  return present === known
}

const isSerializedError: Check = (value, trustedJson) => serializedErrorCheck(value, trustedJson)

/** A cause that looks like an error with extra keys would be stripped by zod's union; leave objects to zod unless they are exact. */
const isCause: Check = (value, trustedJson) => {
  if (value === undefined) return true
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return isSerializedError(value, trustedJson)
  return isJson(value, trustedJson)
}

const isJsonRecord: Check = (value, trustedJson) => {
  if (!isPlainObject(value) || Object.hasOwn(value, '__proto__')) return false
  for (const key in value) if (!isJson(value[key], trustedJson)) return false
  return true
}

const serializedErrorCheck = object({
  name: isNonEmpty,
  code: isNonEmpty,
  message: isString,
  cause: optional(isCause),
  data: optional(isJsonRecord),
  stack: optional(isString),
})

const common: Shape = {
  v: (value) => value === JOURNAL_SCHEMA_VERSION,
  seq: isCount,
  ts: isTimestamp,
  runId: isNonEmpty,
  executionId: isNonEmpty,
  type: isNonEmpty,
}

const trio: Shape = { attempt: intAtLeast(1), attempts: intAtLeast(1), logicalCallId: isNonEmpty }
const callPlace: Shape = { label: optional(isString), phase: optional(isString), groupId: optional(isString) }
const attemptWithinAttempts: Refinement = (line) =>
  line.attempt === undefined || line.attempts === undefined || (line.attempt as number) <= (line.attempts as number)
const isFailureCause = oneOf(FAILURE_CAUSES)
const isGroupKind = oneOf(['parallel', 'pipeline'])
const toolAttempt: Shape = { toolCallId: isNonEmpty, tool: isNonEmpty, attempt: intAtLeast(1), maxAttempts: intAtLeast(1) }
const isRunGap = object({ tool: isNonEmpty, criticality: oneOf(STEP_CRITICALITIES), reason: optional(isString) })
const toolPlace: Shape = { ordinal: optional(isNonEmpty), parentCallId: optional(isNonEmpty) }
const isRetryRefused = object({ by: oneOf(RETRY_REFUSERS), delayMs: optional(isDuration) })

const isEscalation = object({ to: isNonEmpty, after: optional((value) => isNonEmpty(value, true) || isDuration(value, true)) })
const isDefaultPolicy = object({ default: isJson })
const isEscalatePolicy = object({ escalate: isEscalation })
/** `'reject'`, `{ default }` or `{ escalate: { to, after? } }`, exactly. */
const isOnTimeout: Check = (value, trustedJson) => value === 'reject' || isDefaultPolicy(value, trustedJson) || isEscalatePolicy(value, trustedJson)

const DEFERRED_OPEN = object({
  ...common,
  deferredId: isNonEmpty,
  toolCallId: isNonEmpty,
  tool: isNonEmpty,
  attempt: intAtLeast(1),
  args: optional(isJson),
  expiresAt: (value) => value === null,
  onTimeout: optional(isOnTimeout),
  to: optional(isNonEmpty),
  escalatedFrom: optional(isNonEmpty),
})

const childAttempt: Shape = {
  childCallId: isNonEmpty,
  workflow: isNonEmpty,
  attempt: intAtLeast(1),
  maxAttempts: intAtLeast(1),
  ordinal: isNonEmpty,
  childExecutionId: isNonEmpty,
}

const CHECKS: Readonly<Record<string, Check>> = {
  run_start: object({
    ...common,
    workflow: isNonEmpty,
    input: isJson,
    options: isJson,
    parentRunId: optional(isNonEmpty),
    parentExecutionId: optional(isNonEmpty),
    parentCallId: optional(isNonEmpty),
    resumeOf: optional(isNonEmpty),
    workspaceMode: optional(isNonEmpty),
  }),
  run_end: object(
    {
      ...common,
      disposition: oneOf(RUN_DISPOSITIONS),
      ok: isBoolean,
      result: isJson,
      error: optional(isSerializedError),
      durationMs: isDuration,
      answerOutcome: optional(oneOf(ANSWER_OUTCOMES)),
      gaps: optional((value, trustedJson) => Array.isArray(value) && value.every((gap) => isRunGap(gap, trustedJson))),
      caveats: optional((value) => Array.isArray(value) && value.every((caveat) => typeof caveat === 'string')),
    },
    [(line) => line.ok === (line.disposition === 'completed')],
  ),
  agent_start: object(
    {
      ...common,
      callId: isNonEmpty,
      ...trio,
      agent: isNonEmpty,
      ...callPlace,
      ordinal: isNonEmpty,
      requestKey: optional(isString),
      timeoutMs: optional((value) => typeof value === 'number' && Number.isFinite(value) && value > 0),
      prompt: isString,
    },
    [attemptWithinAttempts],
  ),
  agent_end: object(
    {
      ...common,
      callId: isNonEmpty,
      ...trio,
      agent: isNonEmpty,
      ...callPlace,
      ordinal: isNonEmpty,
      status: oneOf(['completed', 'failed']),
      failureCause: optional(isFailureCause),
      reason: optional(isString),
      stopReason: optional(isString),
      durationMs: isDuration,
      usage: optional(object({ inputTokens: isCount, outputTokens: isCount })),
      replayed: optional(isBoolean),
      answer: optional(isJson),
      retryRefused: optional(isRetryRefused),
      repaired: optional(object({ from: isString, to: isNonEmpty, via: oneOf(['clarification', 'fallback']) })),
    },
    [attemptWithinAttempts, (line) => (line.status === 'failed') === (line.failureCause !== undefined)],
  ),
  error: object(
    {
      ...common,
      message: isString,
      error: isSerializedError,
      failureCause: optional(isFailureCause),
      callId: optional(isNonEmpty),
      agent: optional(isNonEmpty),
      ordinal: optional(isNonEmpty),
      ...callPlace,
      attempt: optional(intAtLeast(1)),
      attempts: optional(intAtLeast(1)),
      logicalCallId: optional(isNonEmpty),
      retryRefused: optional(isRetryRefused),
    },
    [
      (line) => {
        const present = Number(line.attempt !== undefined) + Number(line.attempts !== undefined) + Number(line.logicalCallId !== undefined)
        return present === 0 || present === 3
      },
      attemptWithinAttempts,
    ],
  ),
  retry: object(
    {
      ...common,
      kind: oneOf(['agent', 'tool', 'child']),
      message: (value) => typeof value === 'string' && value.startsWith(RETRY_MESSAGE_PREFIX),
      logicalCallId: optional(isNonEmpty),
      callId: optional(isNonEmpty),
      fromAttempt: intAtLeast(1),
      toAttempt: intAtLeast(2),
      attempts: intAtLeast(2),
      cause: isNonEmpty,
      delayMs: optional(isDuration),
    },
    [(line) => (line.fromAttempt as number) < (line.toAttempt as number) && (line.toAttempt as number) <= (line.attempts as number)],
  ),
  group_start: object({
    ...common,
    groupId: isNonEmpty,
    groupKind: isGroupKind,
    total: isCount,
    parentGroupId: optional(isNonEmpty),
    label: optional(isString),
    phase: optional(isString),
    concurrency: optional(intAtLeast(1)),
  }),
  group_end: object(
    {
      ...common,
      groupId: isNonEmpty,
      groupKind: isGroupKind,
      total: isCount,
      completed: isCount,
      failed: isCount,
      notDispatched: isCount,
      outcome: oneOf(['completed', 'failed', 'hard-stopped', 'cancelled']),
      stageIndex: optional(isCount),
    },
    [(line) => line.outcome !== 'completed' || (line.failed === 0 && line.notDispatched === 0)],
  ),
  tool_start: object({
    ...common,
    ...toolAttempt,
    ...callPlace,
    ...toolPlace,
    requestKey: optional(isString),
    args: optional(isJson),
    timeoutMs: optional((value) => typeof value === 'number' && Number.isFinite(value) && value > 0),
  }),
  tool_end: object({
    ...common,
    ...toolAttempt,
    ...callPlace,
    ...toolPlace,
    status: oneOf(['completed', 'failed', 'timed-out']),
    failure: optional(object({ error: isString, retryable: isBoolean, code: optional(oneOf(ERROR_CODES)) })),
    result: optional(isJson),
    replayed: optional(isBoolean),
    durationMs: isDuration,
    retryRefused: optional(isRetryRefused),
  }),
  budget_change: object({
    ...common,
    budget: isNonEmpty,
    scope: oneOf(['run', 'call']),
    from: isNumberOrNull,
    to: isNumberOrNull,
    callId: optional(isNonEmpty),
    reason: optional(isString),
  }),
  replay_diverged: object({
    ...common,
    ordinal: isNonEmpty,
    expectedKey: isString,
    actualKey: isString,
    fields: (value) => Array.isArray(value) && value.every((field) => typeof field === 'string'),
  }),
  llm_attempt: object(
    {
      ...common,
      callId: isNonEmpty,
      logicalCallId: isNonEmpty,
      attempt: intAtLeast(1),
      attempts: intAtLeast(1),
      agent: isNonEmpty,
      model: isString,
      turn: intAtLeast(1),
      step: intAtLeast(1),
      llmAttempt: intAtLeast(1),
      llmMaxAttempts: intAtLeast(1),
      outcome: oneOf(['succeeded', 'failed', 'timed-out', 'cancelled']),
      code: optional(oneOf(ERROR_CODES)),
      status: optional((value) => Number.isSafeInteger(value)),
      error: optional(isString),
      retryable: optional(isBoolean),
      retryAfterMs: optional(isDuration),
      delayBeforeNextMs: optional(isDuration),
      durationMs: isDuration,
      streamed: isBoolean,
      timeToFirstTokenMs: optional(isDuration),
      turnBudget: optional(oneOf(['idle', 'total'])),
      usage: optional(object({ inputTokens: isCount, outputTokens: isCount })),
    },
    [(line) => (line.attempt as number) <= (line.attempts as number) && (line.llmAttempt as number) <= (line.llmMaxAttempts as number)],
  ),
  // Dates are left to zod: the fast path declines anything it does not check fully.
  deferred_open: DEFERRED_OPEN,
  deferred_settled: object({
    ...common,
    deferredId: isNonEmpty,
    outcome: oneOf(['resolved', 'rejected', 'expired', 'escalated', 'cancelled']),
    result: optional(isJson),
    error: optional(object({ error: isString, retryable: isBoolean, code: optional(oneOf(ERROR_CODES)) })),
    decidedBy: optional(isNonEmpty),
    via: optional(oneOf(DECISION_VIAS)),
  }),
  deferred_expired: object({
    ...common,
    deferredId: isNonEmpty,
    toolCallId: isNonEmpty,
    tool: isNonEmpty,
    policy: isOnTimeout,
    applied: oneOf(['rejected', 'default', 'escalated']),
    result: optional(isJson),
    escalatedTo: optional(isNonEmpty),
    to: optional(isNonEmpty),
  }),
  child_start: object({ ...common, ...childAttempt, ...callPlace, requestKey: optional(isString), input: optional(isJson) }),
  child_end: object(
    {
      ...common,
      ...childAttempt,
      ...callPlace,
      status: oneOf(['completed', 'failed', 'timed-out']),
      disposition: optional(oneOf(RUN_DISPOSITIONS)),
      result: optional(isJson),
      error: optional(isSerializedError),
      failure: optional(object({ error: isString, retryable: isBoolean, code: optional(oneOf(ERROR_CODES)) })),
      replayed: optional(isBoolean),
      durationMs: isDuration,
      retryRefused: optional(isRetryRefused),
    },
    [(line) => line.status !== 'completed' || line.disposition === 'completed'],
  ),
  lease_acquired: object({ ...common, owner: isNonEmpty, epoch: intAtLeast(1), leaseMs: isDuration }),
  lease_lost: object({ ...common, owner: isNonEmpty, epoch: intAtLeast(1), reason: oneOf(['expired', 'taken', 'released']) }),
  worker_takeover: object({ ...common, owner: isNonEmpty, epoch: intAtLeast(1), previousOwner: isNonEmpty, previousEpoch: intAtLeast(1) }),
  run_cancel_requested: object({ ...common, reason: isString, by: isNonEmpty }),
  timer_start: object({ ...common, timerId: isNonEmpty, logicalCallId: isNonEmpty, ordinal: isNonEmpty, dueAt: isTimestamp, ...callPlace, replayed: optional(isBoolean) }),
  timer_fired: object({ ...common, timerId: isNonEmpty, firedAt: isTimestamp, lateMs: isDuration, replayed: optional(isBoolean) }),
  signal_received: object({ ...common, name: isNonEmpty, payload: isJson, from: isNonEmpty, via: oneOf(SIGNAL_VIAS), signalSeq: isCount }),
  signal_wait_start: object({ ...common, waitId: isNonEmpty, name: isNonEmpty, ordinal: isNonEmpty, dueAt: optional(isTimestamp), ...callPlace, replayed: optional(isBoolean) }),
  signal_wait_end: object({ ...common, waitId: isNonEmpty, name: isNonEmpty, signalSeq: optional(isCount), timedOut: optional((value) => value === true), replayed: optional(isBoolean) }),
  update_received: object({ ...common, updateId: isNonEmpty, name: isNonEmpty, input: isJson, from: isNonEmpty, via: oneOf(SIGNAL_VIAS), updateSeq: isCount }),
  update_completed: object({ ...common, updateId: isNonEmpty, name: isNonEmpty, output: isJson }),
  update_failed: object({ ...common, updateId: isNonEmpty, name: isNonEmpty, error: isNonEmpty }),
  queued: object({
    ...common,
    keys: (value) => Array.isArray(value) && value.every((key) => typeof key === 'string'),
    reason: oneOf(['concurrency', 'rate', 'priority']),
    waitedMs: isDuration,
  }),
  rate_wait: object({ ...common, limit: isNonEmpty, waitedMs: isDuration, callId: optional(isString) }),
  log: object({
    ...common,
    level: oneOf(['info', 'warn', 'error']),
    message: isString,
    data: optional(isJson),
    label: optional(isString),
    phase: optional(isString),
  }),
}

/**
 * True when `value` is a valid journal line exactly as it stands, so zod would
 * accept it and return it unchanged. False means "ask zod", not "invalid".
 *
 * @param trustedJson - the value came straight from `JSON.parse` of a text
 *   that does not contain `__proto__`, so its JSON payload fields need no deep
 *   check (zod would drop an own `__proto__` key; the deep check declines it).
 */
export function isValidLineFast(value: unknown, trustedJson: boolean): boolean {
  if (!isPlainObject(value)) return false
  const type = value.type
  if (typeof type !== 'string' || !Object.hasOwn(CHECKS, type)) return false
  return (CHECKS[type] as Check)(value, trustedJson)
}
