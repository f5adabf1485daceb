import { WorkflowRunDeadlineError, allocateChildId, currentSlot } from '@locus/groups'
import { type ErrorCode, type JsonValue, prepareWorkflowResult } from '@locus/outcome'
import { type ToolCallRecord, toolRequestKey } from '@locus/replay'
import type { OnTimeoutPolicyJson, RetryRefused } from '@locus/journal'
import { CallError, DEFAULT_RETRY_POLICY, type AttemptRecord, type LateResult, type RetryPolicy, parseRetryPolicy, runWithRetry } from '@locus/retry'
import { type Action, type ToolExecuteTrigger, sendToolTrigger } from '@locus/protocol'
import type { z } from 'zod'
import type { ToolCallOptions } from './define.js'
import { DEFERRAL_EXPIRED, type DeferredAnswer } from './deferrals.js'
import { escalationWaitMs } from './on-timeout.js'
import { RuntimeInputError, ToolCallError } from './errors.js'
import { positionToken } from './ids.js'
import type { RunState } from './run-state.js'
import { describeZodIssues } from './zod-issues.js'

// Policies are plain objects reused call after call: validate each object
// once, and again only if one of its fields changed since.
const validatedPolicies = new WeakMap<object, RetryPolicy>()

function validatedPolicy(policy: RetryPolicy): RetryPolicy {
  const known = validatedPolicies.get(policy)
  if (
    known !== undefined &&
    known.timeout_secs === policy.timeout_secs &&
    known.max_retries === policy.max_retries &&
    known.backoff_base_secs === policy.backoff_base_secs &&
    known.backoff_max_secs === policy.backoff_max_secs
  ) {
    return known
  }
  const parsed = parseRetryPolicy(policy)
  validatedPolicies.set(policy, parsed)
  return parsed
}

/** The `retryRefused` of a tool attempt whose retry the run's budget or deadline refused. */
function retryRefusedOf(record: AttemptRecord): { retryRefused?: RetryRefused } {
  if (record.retryDenied === undefined) return {}
  const by = record.retryDenied === 'deadline' ? 'run-deadline' : 'retry-budget'
  return { retryRefused: { by, ...(record.deniedDelayMs === undefined ? {} : { delayMs: record.deniedDelayMs }) } }
}

function toolEndStatus(record: AttemptRecord): 'completed' | 'failed' | 'timed-out' {
  if (record.outcome === 'succeeded') return 'completed'
  if (record.outcome === 'timed-out') return 'timed-out'
  return 'failed'
}

/** Detaches a value to JSON, or says why it cannot be. */
function detach(value: unknown): { ok: true; json: JsonValue } | { ok: false; reason: string } {
  try {
    return { ok: true, json: prepareWorkflowResult(value) }
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) }
  }
}

/**
 * The agent attempt a child's tool call belongs to. Its tool calls are
 * numbered under that attempt (`<callId>-tool-<n>`) and take no position in
 * the workflow's group tree, so however many tools a model happens to call,
 * the script's own calls keep their ordinals and replay lines up.
 */
export interface ToolCallParent {
  readonly callId: string
  /** The next number for a tool call of this attempt. */
  next(): number
}

/**
 * Answers a script's tool call from its recording: the recorded result, or
 * the recorded failure thrown again. The journal still shows the call, marked
 * `replayed`, so a reader sees where the value came from.
 */
function replayRecordedTool(run: RunState, record: ToolCallRecord, where: Record<string, unknown> & { toolCallId: string; tool: string; maxAttempts: number }): unknown {
  const place = { ...where, toolCallId: record.callId, maxAttempts: record.maxAttempts }
  run.emit({ type: 'tool_start', ...place, attempt: record.attempt } as never)
  run.emit({
    type: 'tool_end',
    ...place,
    attempt: record.attempt,
    status: record.status === 'completed' ? 'completed' : record.timedOut === true ? 'timed-out' : 'failed',
    ...(record.failure === undefined ? {} : { failure: record.failure }),
    ...(record.result === undefined ? {} : { result: record.result }),
    replayed: true,
    durationMs: 0,
  } as never)
  if (record.status === 'completed') return record.result
  const failure = record.failure ?? { error: 'the recorded call failed', retryable: false }
  throw new ToolCallError({
    tool: where.tool,
    toolCallId: record.callId,
    failure: { error: failure.error, retryable: failure.retryable, ...(failure.code === undefined ? {} : { code: failure.code as never }) },
    attempts: [{ attempt: record.attempt, startedAt: 0, endedAt: 0, deadline: null, outcome: record.timedOut === true ? 'timed-out' : 'failed', failure }] as never,
    stopReason: record.attempt >= record.maxAttempts ? 'exhausted' : 'terminal',
  })
}

/**
 * The `tool()` of a workflow context: validates the arguments with the tool's
 * zod schema, then runs it under its retry policy (the call's, else the
 * tool's, else no retry and no timeout), journaling every attempt. A completed
 * attempt's result is journaled on its `tool_end`, so a resumed or replayed
 * run serves the call from the journal instead of running it again. With a
 * `parent`, the call is a child agent's, made during its turn.
 */
export async function callTool(run: RunState, name: string, args: unknown, options: ToolCallOptions = {}, parent?: ToolCallParent): Promise<unknown> {
  const tools = run.workflow.tools ?? {}
  const tool = Object.hasOwn(tools, name) ? tools[name] : undefined
  if (tool === undefined) {
    const known = Object.keys(tools)
    throw new RuntimeInputError(
      'UNKNOWN_TOOL',
      `Unknown tool "${name}". ${known.length === 0 ? 'This workflow declares no tools.' : `Declared tools: ${known.join(', ')}.`}`,
      [`tool: "${name}" is not declared`],
    )
  }
  const parsedArgs = tool.input.safeParse(args)
  if (!parsedArgs.success) {
    const issues = describeZodIssues(parsedArgs.error, `${name} args`)
    throw new RuntimeInputError('TOOL_INPUT_INVALID', `Invalid arguments for tool "${name}":\n  ${issues.join('\n  ')}`, issues)
  }
  const requested = options.retry ?? tool.retry ?? DEFAULT_RETRY_POLICY
  const policy = validatedPolicy(requested)
  const slot = currentSlot()
  const label = options.label ?? slot?.label
  const groupId = slot?.groupId
  // A child's tool call is numbered under its agent attempt; only the script's own calls take a position.
  const ordinal = parent === undefined ? allocateChildId() : undefined
  const toolCallId = parent === undefined ? `tool-${positionToken(ordinal as string)}` : `${parent.callId}-tool-${parent.next()}`
  const place = parent === undefined ? { ordinal: ordinal as string } : { parentCallId: parent.callId }
  const where = { toolCallId, tool: name, maxAttempts: policy.max_retries, ...(label === undefined ? {} : { label }), ...(groupId === undefined ? {} : { groupId }), ...place }
  run.checkDispatch()
  // The canonical request: the tool's name and its validated arguments as JSON.
  const detachedArgs = parent === undefined ? detach(parsedArgs.data) : undefined
  const decision =
    run.replay !== undefined && ordinal !== undefined && detachedArgs?.ok === true ? run.replay.next({ kind: 'tool', ordinal, request: { tool: name, args: detachedArgs.json } }) : undefined
  if (decision?.mode === 'replay') return replayRecordedTool(run, decision.record, where)
  // The session's key when it decided the call (one hash per call, not two).
  const requestKey = decision?.key ?? (detachedArgs?.ok === true ? toolRequestKey({ tool: name, args: detachedArgs.json }) : undefined)
  const identity = detachedArgs?.ok === true && requestKey !== undefined ? { requestKey, args: detachedArgs.json } : {}
  let lastValue: { attempt: number; value: unknown } | undefined

  const remote = tool.remote === true
  const deferred = tool.deferred === true
  const output = (tool as { output?: z.ZodType }).output
  // A deferred tool with `onTimeout` applies it at its own deadline; the attempt is not raced against that deadline as a timeout.
  const onTimeout = deferred ? tool.onTimeout : undefined
  const waitMs = onTimeout === undefined || policy.timeout_secs === null ? null : Math.round(policy.timeout_secs * 1000)
  // Attempts whose worker transport let go at the deadline or on cancel: that rejection is not an answer.
  const letGo = new Set<number>()
  const reportLate = (late: LateResult): void => {
    // An attempt the run cancelled that then let go of the abort (a deferral closed by a shutdown, a
    // tool that threw on its signal) answered nothing: there is nothing to say.
    if (late.endedBy === 'cancelled' && late.outcome === 'failed') return
    // Nor did a remote attempt whose transport stopped waiting: its worker's answer, if one comes, is reported on its own.
    if (late.outcome === 'failed' && letGo.has(late.attempt)) return
    // A worker's answer that came after its attempt's deadline, or after the run was cancelled, is ignored, and says so.
    const after = late.endedBy === 'cancelled' ? 'after the run cancelled it' : 'after its deadline'
    run.emit({ type: 'log', level: 'warn', message: `tool "${name}" attempt ${late.attempt} answered ${after}; the answer was ignored`, data: { toolCallId, attempt: late.attempt, outcome: late.outcome } })
  }
  const outcome = await runWithRetry(
    async ({ attempt, signal, deadline }) => {
      // The attempt's tool_start commits (through a lease fence, on a leased store) before anything runs.
      const committing = run.commitStart()
      if (committing !== undefined) await committing
      const value: unknown = deferred
        ? await waitForAnswer(
            run,
            { name, toolCallId, attempt, deadline: onTimeout === undefined ? deadline : waitMs === null ? null : run.clock.now() + waitMs, signal, args: detach(parsedArgs.data), output },
            onTimeout,
          )
        : remote
          ? await callWorker(run, { name, toolCallId, attempt, deadline, signal, args: detach(parsedArgs.data), output }, { letGo, reportLate })
          : await tool.run(parsedArgs.data as never, { signal, attempt, toolCallId, runId: run.runId })
      lastValue = { attempt, value }
      return value
    },
    onTimeout === undefined || policy.timeout_secs === null ? policy : { ...policy, timeout_secs: null },
    {
      signal: run.signal,
      clock: run.clock,
      // No retry starts at or after the run deadline, and no backoff waits past it.
      retryDeadline: run.deadlineAt,
      budget: run.retryBudget,
      jitter: run.jitter,
      onLateResult: reportLate,
      onAttemptStart: ({ attempt, startedAt, deadline }) => {
        run.emit({ type: 'tool_start', ...where, ...identity, attempt, ...(deadline === null || deadline <= startedAt ? {} : { timeoutMs: deadline - startedAt }) })
      },
      onAttempt: (record) => {
        run.emit({
          type: 'tool_end',
          ...where,
          attempt: record.attempt,
          status: toolEndStatus(record),
          ...(record.failure === undefined
            ? {}
            : { failure: { error: record.failure.error, retryable: record.failure.retryable, ...(record.failure.code === undefined ? {} : { code: record.failure.code }) } }),
          ...resultOf(record.outcome === 'succeeded' && lastValue?.attempt === record.attempt ? lastValue : undefined),
          durationMs: record.endedAt - record.startedAt,
          ...retryRefusedOf(record),
        })
        if (record.delayBeforeNextMs !== undefined && record.failure !== undefined) {
          run.emit({
            type: 'retry',
            kind: 'tool',
            message: `[workflow:retry] tool "${name}" attempt ${record.attempt}/${policy.max_retries} failed (${record.failure.code ?? 'no code'}: ${record.failure.error}); retrying in ${record.delayBeforeNextMs} ms`,
            callId: toolCallId,
            fromAttempt: record.attempt,
            toAttempt: record.attempt + 1,
            attempts: policy.max_retries,
            cause: record.failure.code ?? 'retryable',
            delayMs: record.delayBeforeNextMs,
          })
        }
      },
    },
  )
  if (outcome.ok) return outcome.value
  const failed = new ToolCallError({ tool: name, toolCallId, failure: outcome.failure, attempts: outcome.attempts, stopReason: outcome.reason })
  if (outcome.deadlineDenied === true && run.deadlineMs !== undefined) {
    // The retry could not start before the deadline: the deadline ends the run here, as it would have
    // when the retry was due, rather than after a backoff spent waiting for a dispatch it would refuse.
    const elapsedMs = run.clock.now() - run.startedAt + (outcome.deniedDelayMs ?? 0)
    run.hardStop(new WorkflowRunDeadlineError({ deadlineMs: run.deadlineMs, elapsedMs, cause: failed }))
  }
  throw failed
}

/**
 * One attempt of a remote tool: a `tool.execute` trigger through the run's
 * worker transport. `tool.result` settles it (checked against the tool's
 * `output` schema when it has one), `tool.error` throws the seed's failure
 * (retryable only when it says so), and a transport failure is the
 * transport's (a dead worker is a retryable `provider_error`). When the
 * attempt's signal aborts the transport stops waiting; the worker's answer,
 * if it still comes, is reported late and ignored.
 */
async function callWorker(
  run: RunState,
  call: { name: string; toolCallId: string; attempt: number; deadline: number | null; signal: AbortSignal; args: ReturnType<typeof detach>; output: z.ZodType | undefined },
  late: { readonly letGo: Set<number>; readonly reportLate: (late: LateResult) => void },
): Promise<unknown> {
  const worker = run.worker
  if (worker === undefined) {
    throw new CallError(`tool "${call.name}" is remote, but this run has no worker: pass \`worker\` (a transport from @locus/protocol) to the run, or --worker to locus run`, { retryable: false })
  }
  if (!call.args.ok) throw new CallError(`tool "${call.name}"'s arguments cannot travel as JSON: ${call.args.reason}`, { retryable: false })
  const trigger: ToolExecuteTrigger = {
    type: 'tool.execute',
    id: call.toolCallId,
    attempt: call.attempt,
    deadline: call.deadline === null ? null : new Date(call.deadline).toISOString(),
    name: call.name,
    arguments: call.args.json,
  }
  // What abandoned the attempt, read when the transport lets go: the run's cancellation or the attempt's deadline.
  let endedBy: LateResult['endedBy'] = 'timed-out'
  const onLateAnswer = (actions: readonly Action[]): void => {
    const answer = actions.find((action) => action.type === 'tool.result' || action.type === 'tool.error')
    if (answer === undefined) return
    const settledAt = run.clock.now()
    late.reportLate(
      answer.type === 'tool.result'
        ? { attempt: call.attempt, settledAt, outcome: 'succeeded', endedBy }
        : { attempt: call.attempt, settledAt, outcome: 'failed', failure: { error: answer.error, retryable: answer.retryable === true }, endedBy },
    )
  }
  let result
  try {
    result = await sendToolTrigger(worker, trigger, call.signal, onLateAnswer)
  } catch (error) {
    if (call.signal.aborted) {
      endedBy = run.signal.aborted ? 'cancelled' : 'timed-out'
      late.letGo.add(call.attempt)
    }
    throw error
  }
  if (call.output === undefined) return result
  const checked = call.output.safeParse(result)
  if (!checked.success) {
    throw new CallError(`the worker's result for tool "${call.name}" does not match its output schema: ${describeZodIssues(checked.error, 'result').join('; ')}`, { retryable: false })
  }
  return checked.data
}

/** One deferred call's attempt, as waitForAnswer needs it. */
interface DeferredCall {
  readonly name: string
  readonly toolCallId: string
  readonly attempt: number
  /** The deferral's deadline, clock milliseconds, or null for none. */
  readonly deadline: number | null
  readonly signal: AbortSignal
  readonly args: ReturnType<typeof detach>
  readonly output: z.ZodType | undefined
}

/** The deferral a call waits on: its own, then the one an escalation opened for another party. */
interface DeferralStage {
  readonly deferredId: string
  /** What its deadline does; undefined for a deferral whose deadline is the attempt's timeout. */
  readonly policy: OnTimeoutPolicyJson | undefined
  readonly deadline: number | null
  readonly to?: string
  readonly escalatedFrom?: string
}

/** The failure of a call whose deferral expired under `'reject'`: final, as a no is. */
function expiredFailure(name: string, deferredId: string): CallError {
  return new CallError(`deferral ${deferredId} of tool "${name}" expired with no answer; its onTimeout policy rejected the call`, { retryable: false, code: 'deadline_exceeded' })
}

/**
 * One attempt of a deferred tool: a deferral opened in the journal (before its
 * id is visible to anyone) that waits for an answer from outside the run. A
 * resumed execution waits on the deferral its predecessor opened, under the
 * same id and until the same deadline, and picks up an answer stored
 * meanwhile. With `onTimeout`, the deadline applies it (`deferred_expired`),
 * and a resume serves what an earlier execution applied from the journal.
 */
async function waitForAnswer(run: RunState, call: DeferredCall, onTimeout: OnTimeoutPolicyJson | undefined): Promise<unknown> {
  // A child run shares its root's deferrals, so its ids carry its execution to stay apart from the parent's.
  let stage: DeferralStage = { deferredId: `${run.deferredIdPrefix}${call.toolCallId}-a${call.attempt}`, policy: onTimeout, deadline: call.deadline }
  for (;;) {
    const recorded = run.recordedDeferrals.get(stage.deferredId)
    const expired = recorded?.expired
    let applied: { policy: OnTimeoutPolicyJson; kind: 'rejected' | 'default' | 'escalated' }
    if (expired === undefined) {
      // A deadline an earlier execution journaled stands: a resume waits only for what is left of it.
      const deadline = stage.policy !== undefined && recorded !== undefined ? recorded.expiresAt : stage.deadline
      const answer = await waitOnce(run, call, { ...stage, deadline })
      if (answer !== DEFERRAL_EXPIRED) return settleAnswer(run, stage.deferredId, answer)
      const policy = stage.policy ?? 'reject'
      applied = { policy, kind: policy === 'reject' ? 'rejected' : 'default' in policy ? 'default' : 'escalated' }
    } else {
      // Applied by an earlier execution: served from the journal, never opened or applied again.
      if (expired.applied === 'default') return expired.result ?? null
      if (expired.applied === 'rejected' || expired.escalatedTo === undefined) throw expiredFailure(call.name, stage.deferredId)
      stage = escalationOf(run, expired.policy, stage.deferredId, expired.escalatedTo)
      continue
    }
    const base = { type: 'deferred_expired' as const, deferredId: stage.deferredId, toolCallId: call.toolCallId, tool: call.name, policy: applied.policy }
    const { policy } = applied
    if (policy === 'reject') {
      run.emit({ ...base, applied: 'rejected' })
      run.emit({ type: 'deferred_settled', deferredId: stage.deferredId, outcome: 'expired' })
      throw expiredFailure(call.name, stage.deferredId)
    }
    if ('default' in policy) {
      run.emit({ ...base, applied: 'default', result: policy.default })
      run.emit({ type: 'deferred_settled', deferredId: stage.deferredId, outcome: 'expired', result: policy.default })
      return policy.default
    }
    const next = escalationOf(run, policy, stage.deferredId, `${stage.deferredId}-escalated`)
    run.emit({ ...base, applied: 'escalated', escalatedTo: next.deferredId, to: policy.escalate.to })
    run.emit({ type: 'deferred_settled', deferredId: stage.deferredId, outcome: 'escalated' })
    stage = next
  }
}

/** The deferral an escalation opens: for its party, with `after` to answer (from now), then failing as `'reject'`. */
function escalationOf(run: RunState, policy: OnTimeoutPolicyJson, from: string, deferredId: string): DeferralStage {
  const escalate = typeof policy === 'object' && 'escalate' in policy ? policy.escalate : undefined
  const waitMs = escalate === undefined ? null : escalationWaitMs(escalate.after)
  return { deferredId, policy: 'reject', deadline: waitMs === null ? null : run.clock.now() + waitMs, ...(escalate === undefined ? {} : { to: escalate.to }), escalatedFrom: from }
}

/** The journal line of an answer, and the call's value: its result, or its rejection thrown as the seed's `tool.error`. */
function settleAnswer(run: RunState, deferredId: string, answer: DeferredAnswer): unknown {
  const decider = { ...(answer.decidedBy === undefined ? {} : { decidedBy: answer.decidedBy }), ...(answer.via === undefined ? {} : { via: answer.via }) }
  if (answer.kind === 'rejected') {
    const code = answer.code as ErrorCode | undefined
    run.emit({ type: 'deferred_settled', deferredId, outcome: 'rejected', error: { error: answer.error, retryable: answer.retryable, ...(code === undefined ? {} : { code }) }, ...decider })
    throw new CallError(answer.error, { retryable: answer.retryable, ...(code === undefined ? {} : { code }) })
  }
  run.emit({ type: 'deferred_settled', deferredId, outcome: 'resolved', result: answer.result, ...decider })
  return answer.result
}

/**
 * Opens one deferral (unless an earlier execution did) and waits for its
 * answer, or, when it has a policy, for its deadline on the run's clock. An
 * answer the run's store holds when the deadline comes wins over the deadline.
 */
async function waitOnce(run: RunState, call: DeferredCall, stage: DeferralStage): Promise<DeferredAnswer | typeof DEFERRAL_EXPIRED> {
  const { deferredId } = stage
  // Registered first, so an answer given the moment the id becomes visible finds its deferral.
  const waiting = run.deferrals.wait(deferredId, call.output, call.signal)
  waiting.catch(() => undefined)
  if (!run.openedDeferrals.has(deferredId)) {
    run.emit({
      type: 'deferred_open',
      deferredId,
      toolCallId: call.toolCallId,
      tool: call.name,
      attempt: call.attempt,
      ...(call.args.ok ? { args: call.args.json } : {}),
      expiresAt: stage.deadline === null ? null : new Date(stage.deadline).toISOString(),
      ...(stage.policy === undefined ? {} : { onTimeout: stage.policy }),
      ...(stage.to === undefined ? {} : { to: stage.to }),
      ...(stage.escalatedFrom === undefined ? {} : { escalatedFrom: stage.escalatedFrom }),
    })
    // Committed before anyone outside can see the deferral and answer it.
    await run.commitStart()
  }
  const ended = new AbortController()
  if (stage.policy !== undefined && stage.deadline !== null) armExpiry(run, deferredId, stage.deadline, ended.signal)
  const endWait = run.activity.beginWait()
  try {
    return await waiting
  } catch (error) {
    run.emit({ type: 'deferred_settled', deferredId, outcome: run.signal.aborted ? 'cancelled' : 'expired' })
    throw error
  } finally {
    ended.abort()
    endWait()
  }
}

/** Expires a deferral at `deadline` on the run's clock, after one more look at the store; stops when `stop` aborts (the wait ended). */
function armExpiry(run: RunState, deferredId: string, deadline: number, stop: AbortSignal): void {
  // Read through a function: the wait may end during any await below.
  const stopped = (): boolean => stop.aborted
  void (async () => {
    for (let now = run.clock.now(); now < deadline && !stopped(); now = run.clock.now()) {
      await run.clock.sleep(deadline - now, stop).catch(() => undefined)
    }
    if (stopped()) return
    await run.deferrals.lookNow()
    if (!stopped()) run.deferrals.expire(deferredId)
  })()
}

/** The `result` of a succeeded attempt's `tool_end`: its JSON copy, or nothing when it cannot be detached (the call then runs again on resume). */
function resultOf(settled: { value: unknown } | undefined): { result?: JsonValue } {
  if (settled === undefined) return {}
  const detached = detach(settled.value)
  return detached.ok ? { result: detached.json } : {}
}
