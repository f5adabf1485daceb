import { WorkflowRunDeadlineError, allocateChildId, currentSlot } from '@locus/groups'
import type { ChildCost, RunCost, SerializedError } from '@locus/journal'
import { type JsonValue, prepareWorkflowResult } from '@locus/outcome'
import { type ChildCallRecord, childRequestKey } from '@locus/replay'
import { CallError, type CallFailure, DEFAULT_RETRY_POLICY, type AttemptRecord, parseRetryPolicy, runWithRetry } from '@locus/retry'
import { type SpawnOptions, type WorkflowDefinition, isWorkflowDefinition } from './define.js'
import { ChildWorkflowError, RuntimeInputError } from './errors.js'
import { positionToken } from './ids.js'
import type { RunResultOfChild, RunState } from './run-state.js'
import { describeZodIssues } from './zod-issues.js'
import { EXECUTION_ID_PREFIX } from '@locus/store'

/** The prefix of every child execution id, so a store reads its kind back from the id. */
export const CHILD_EXECUTION_PREFIX = EXECUTION_ID_PREFIX.child

/**
 * The execution id of one spawn attempt, unique within the stored run: a
 * root's (or resume's) child is `child-<position>-a<attempt>`, a child's child
 * nests under its parent's id (`child-1-a1.2-a1`), and a replay's children
 * stay apart from the run's own (`child-replay-001.1-a1`).
 */
export function childExecutionIdOf(run: Pick<RunState, 'runId' | 'executionId'>, ordinal: string, attempt: number): string {
  const own = `${positionToken(ordinal)}-a${attempt}`
  if (run.executionId.startsWith(CHILD_EXECUTION_PREFIX)) return `${run.executionId}.${own}`
  if (run.executionId === run.runId || run.executionId.startsWith(EXECUTION_ID_PREFIX.resume)) return `${CHILD_EXECUTION_PREFIX}${own}`
  return `${CHILD_EXECUTION_PREFIX}${run.executionId}.${own}`
}

function resolveWorkflow(run: RunState, workflow: WorkflowDefinition | string): WorkflowDefinition {
  if (typeof workflow === 'string') {
    const found = run.workflows.get(workflow)
    if (found !== undefined) return found
    const known = [...run.workflows.keys()]
    throw new RuntimeInputError(
      'UNKNOWN_WORKFLOW',
      `spawn(): no workflow named "${workflow}" is registered. ${known.length === 0 ? 'This runtime registers no workflows: pass the definition itself, or register it with createRuntime({ workflows }).' : `Registered: ${known.join(', ')}.`}`,
      [`workflow: "${workflow}" is not registered`],
    )
  }
  if (isWorkflowDefinition(workflow) || (typeof workflow === 'object' && (workflow as unknown) !== null && typeof (workflow as { run?: unknown }).run === 'function')) {
    if (typeof workflow.name !== 'string' || workflow.name === '') {
      throw new RuntimeInputError('WORKFLOW_DEFINITION_INVALID', 'spawn(): the child workflow has no name; give defineWorkflow({ name }) a non-empty string.', ['workflow.name: required'])
    }
    return workflow
  }
  throw new RuntimeInputError('WORKFLOW_DEFINITION_INVALID', `spawn(): expected a workflow made by defineWorkflow() or the name of a registered one; got ${typeof workflow}`, ['workflow: not a workflow'])
}

function endStatus(record: AttemptRecord): 'completed' | 'failed' | 'timed-out' {
  if (record.outcome === 'succeeded') return 'completed'
  if (record.outcome === 'timed-out') return 'timed-out'
  return 'failed'
}

/** The seed-001 failure of a child run that ended other than `completed`: only a failed one may be retried. */
function failureOf(workflow: string, ended: RunResultOfChild): CallError {
  const why = ended.error === undefined ? (ended.disposition === 'completed' ? 'it returned a failure value' : 'see its journal') : ended.error.message
  return new CallError(`child workflow "${workflow}" ended ${ended.disposition}: ${why}`, { retryable: ended.disposition === 'failed' })
}

/** A child run's cost as its `child_end` records it, so the parent's view adds the child into the run's. */
function childCostOf(cost: RunCost): ChildCost {
  return { usd: cost.usd, retryOverheadUsd: cost.retryOverheadUsd, ...(cost.unpricedRequests === 0 ? {} : { unpriced: cost.unpricedRequests }), table: cost.table }
}

interface Where {
  readonly childCallId: string
  readonly workflow: string
  readonly ordinal: string
  readonly label?: string
  readonly phase?: string
  readonly groupId?: string
}

/** Serves a spawn from its recording: the child does not run again. The journal still shows the spawn, marked `replayed`. */
function replayRecordedChild(run: RunState, record: ChildCallRecord, where: Where, identity: { requestKey: string; input: JsonValue }): JsonValue {
  const place = { ...where, attempt: record.attempt, maxAttempts: Math.max(record.maxAttempts, record.attempt), childExecutionId: record.childExecutionId }
  run.emit({ type: 'child_start', ...place, ...identity })
  run.emit({
    type: 'child_end',
    ...place,
    status: record.status === 'completed' ? 'completed' : record.timedOut === true ? 'timed-out' : 'failed',
    ...(record.disposition === undefined ? {} : { disposition: record.disposition }),
    ...(record.result === undefined ? {} : { result: record.result }),
    ...(record.failure === undefined ? {} : { failure: record.failure as never }),
    replayed: true,
    durationMs: 0,
  })
  if (record.status === 'completed') return record.result ?? null
  const failure = record.failure ?? { error: 'the recorded spawn failed', retryable: false }
  throw new ChildWorkflowError({
    workflow: where.workflow,
    childCallId: where.childCallId,
    childExecutionId: record.childExecutionId,
    attempt: record.attempt,
    disposition: record.disposition,
    result: record.result,
    childError: undefined,
    failure: failure as CallFailure,
    stopReason: 'terminal',
  })
}

/**
 * The `spawn()` of a workflow context (seed `sub_agent.spawn`). Each attempt
 * runs the child workflow as its own run in a nested execution of this run,
 * between a `child_start` and a `child_end` line that carry its execution
 * id, disposition and result. The child is judged like a root result; one
 * that does not complete fails the attempt, and the spawn throws
 * {@link ChildWorkflowError} once the policy (default: no retry) is spent.
 */
export async function callSpawn(run: RunState, workflow: WorkflowDefinition | string, input: unknown, options: SpawnOptions = {}): Promise<JsonValue> {
  const definition = resolveWorkflow(run, workflow)
  const name = definition.name
  let childInput: unknown = input
  if (definition.input !== undefined) {
    const parsed = definition.input.safeParse(input)
    if (!parsed.success) {
      const issues = describeZodIssues(parsed.error, 'input')
      throw new RuntimeInputError('WORKFLOW_INPUT_INVALID', `spawn(): invalid input for child workflow "${name}":\n  ${issues.join('\n  ')}`, issues)
    }
    childInput = parsed.data
  }
  let detachedInput: JsonValue
  try {
    detachedInput = prepareWorkflowResult(childInput)
  } catch (error) {
    throw new RuntimeInputError('WORKFLOW_INPUT_INVALID', `spawn(): the input of child workflow "${name}" cannot travel as JSON: ${error instanceof Error ? error.message : String(error)}`, ['input: not JSON'])
  }
  const unknown = Object.keys(options).filter((key) => key !== 'retry' && key !== 'label')
  if (unknown.length > 0 || (options.label !== undefined && typeof options.label !== 'string')) {
    const issues = [...unknown.map((key) => `${key}: not a spawn() option`), ...(options.label === undefined || typeof options.label === 'string' ? [] : ['label: must be a string'])]
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `Invalid spawn() options for child workflow "${name}": ${issues.join('; ')}. spawn() takes { retry, label }.`, issues)
  }
  const policy = parseRetryPolicy(options.retry ?? DEFAULT_RETRY_POLICY)
  const spawnChild = run.spawnChild

  const slot = currentSlot()
  const label = options.label ?? slot?.label
  const phase = slot?.phase
  const groupId = slot?.groupId
  const ordinal = allocateChildId()
  const childCallId = `child-${positionToken(ordinal)}`
  const where: Where = { childCallId, workflow: name, ordinal, ...(label === undefined ? {} : { label }), ...(phase === undefined ? {} : { phase }), ...(groupId === undefined ? {} : { groupId }) }
  run.checkDispatch()
  const decision = run.replay?.next({ kind: 'child', ordinal, request: { workflow: name, input: detachedInput } })
  // The session's key when it decided the spawn (one hash, not two).
  const identity = { requestKey: decision?.key ?? childRequestKey({ workflow: name, input: detachedInput }), input: detachedInput }
  if (decision?.mode === 'replay') return replayRecordedChild(run, decision.record, where, identity)

  // A resumed spawn whose child was still running when the parent stopped runs again as the next attempt.
  const prior = run.priorChildAttempts.get(ordinal) ?? 0
  const maxAttempts = prior + policy.max_retries
  const placeOf = (attempt: number) => ({ ...where, attempt: prior + attempt, maxAttempts, childExecutionId: childExecutionIdOf(run, ordinal, prior + attempt) })
  const ended = new Map<number, RunResultOfChild>()

  const outcome = await runWithRetry(
    async ({ attempt, signal }) => {
      // The child_start commits (through a lease fence, on a leased store) before the child exists.
      await run.commitStart()
      const child = await spawnChild({ definition, input: childInput, childCallId, childExecutionId: placeOf(attempt).childExecutionId, signal })
      ended.set(attempt, child)
      if (child.disposition === 'completed') return child.result
      throw failureOf(name, child)
    },
    policy,
    {
      signal: run.signal,
      clock: run.clock,
      retryDeadline: run.deadlineAt,
      budget: run.retryBudget,
      jitter: run.jitter,
      // A child that hit the root's cap or deadline stopped the whole run tree: never spawn it again.
      shouldRetry: (failure) => failure.retryable && run.hardStopError === undefined,
      onAttemptStart: ({ attempt }) => {
        run.emit({ type: 'child_start', ...placeOf(attempt), ...identity })
        // Durable before the child's execution exists: a resume after a crash then numbers its next attempt past this one.
        run.medium.flush()
      },
      onAttempt: (record) => {
        const child = ended.get(record.attempt)
        const error: SerializedError | undefined = child?.error
        run.emit({
          type: 'child_end',
          ...placeOf(record.attempt),
          status: endStatus(record),
          ...(child === undefined ? {} : { disposition: child.disposition, result: child.result }),
          ...(error === undefined ? {} : { error }),
          ...(child?.cost === undefined ? {} : { cost: childCostOf(child.cost) }),
          ...(record.failure === undefined
            ? {}
            : { failure: { error: record.failure.error, retryable: record.failure.retryable, ...(record.failure.code === undefined ? {} : { code: record.failure.code }) } }),
          durationMs: record.endedAt - record.startedAt,
          ...(record.retryDenied === undefined
            ? {}
            : { retryRefused: { by: record.retryDenied === 'deadline' ? 'run-deadline' : 'retry-budget', ...(record.deniedDelayMs === undefined ? {} : { delayMs: record.deniedDelayMs }) } }),
        })
        if (record.delayBeforeNextMs !== undefined && record.failure !== undefined) {
          run.emit({
            type: 'retry',
            kind: 'child',
            message: `[workflow:retry] child workflow "${name}" attempt ${prior + record.attempt}/${maxAttempts} failed (${record.failure.code ?? 'child failed'}: ${record.failure.error}); spawning it again in ${record.delayBeforeNextMs} ms`,
            callId: childCallId,
            fromAttempt: prior + record.attempt,
            toAttempt: prior + record.attempt + 1,
            attempts: maxAttempts,
            cause: record.failure.code ?? 'child-failed',
            delayMs: record.delayBeforeNextMs,
          })
        }
      },
    },
  )
  if (outcome.ok) return outcome.value
  // The root's cap or deadline ended the child: it ends this run too, unwrapped, as it would have here.
  if (run.hardStopError !== undefined) run.hardStop(run.hardStopError)
  const last = outcome.attempts.at(-1)
  const lastAttempt = last?.attempt ?? 1
  const child = ended.get(lastAttempt)
  const failed = new ChildWorkflowError({
    workflow: name,
    childCallId,
    childExecutionId: placeOf(lastAttempt).childExecutionId,
    attempt: prior + lastAttempt,
    disposition: child?.disposition,
    result: child?.result,
    childError: child?.error,
    failure: outcome.failure,
    stopReason: outcome.reason,
  })
  if (outcome.deadlineDenied === true && run.deadlineMs !== undefined) {
    const elapsedMs = run.clock.now() - run.startedAt + (outcome.deniedDelayMs ?? 0)
    run.hardStop(new WorkflowRunDeadlineError({ deadlineMs: run.deadlineMs, elapsedMs, cause: failed }))
  }
  throw failed
}
