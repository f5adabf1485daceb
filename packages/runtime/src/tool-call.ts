import { allocateChildId, currentSlot } from '@locus/groups'
import { DEFAULT_RETRY_POLICY, type AttemptRecord, type RetryPolicy, parseRetryPolicy, runWithRetry } from '@locus/retry'
import type { ToolCallOptions } from './define.js'
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

function toolEndStatus(record: AttemptRecord): 'completed' | 'failed' | 'timed-out' {
  if (record.outcome === 'succeeded') return 'completed'
  if (record.outcome === 'timed-out') return 'timed-out'
  return 'failed'
}

/**
 * The `tool()` of a workflow context: validates the arguments with the tool's
 * zod schema, then runs it under its retry policy (the call's, else the
 * tool's, else no retry and no timeout), journaling every attempt.
 */
export async function callTool(run: RunState, name: string, args: unknown, options: ToolCallOptions = {}): Promise<unknown> {
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
  const toolCallId = `tool-${positionToken(allocateChildId())}`
  const where = { toolCallId, tool: name, maxAttempts: policy.max_retries, ...(label === undefined ? {} : { label }), ...(groupId === undefined ? {} : { groupId }) }
  run.checkDispatch()

  const outcome = await runWithRetry(
    ({ attempt, signal }) => tool.run(parsedArgs.data as never, { signal, attempt, toolCallId, runId: run.runId }),
    policy,
    {
      signal: run.signal,
      clock: run.clock,
      onAttemptStart: ({ attempt }) => {
        run.emit({ type: 'tool_start', ...where, attempt })
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
          durationMs: record.endedAt - record.startedAt,
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
  throw new ToolCallError({ tool: name, toolCallId, failure: outcome.failure, attempts: outcome.attempts, stopReason: outcome.reason })
}
