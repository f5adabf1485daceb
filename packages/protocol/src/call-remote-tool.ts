import { type AttemptRecord, type AttemptStart, CallError, DEFAULT_RETRY_POLICY, type RetryClock, type RetryOutcome, type RetryPolicy, runWithRetry } from '@locus/retry'
import type { SendOptions, TriggerTransport } from './transport.js'
import type { Action, ToolExecuteTrigger, WireJson } from './wire-schemas.js'

/**
 * One attempt's round trip: sends a `tool.execute` trigger and settles on the
 * worker's answer. `tool.result` gives the result; `tool.error` throws the
 * seed's failure (retryable only when it says `retryable: true`); a
 * transport failure keeps the transport's verdict (a dead worker is a
 * retryable `provider_error`); an answer with neither is terminal. An answer
 * that comes after `signal` abandoned the attempt goes to `onLateAnswer`.
 */
export async function sendToolTrigger(
  transport: TriggerTransport,
  trigger: ToolExecuteTrigger,
  signal?: AbortSignal,
  onLateAnswer?: (actions: Action[]) => void,
): Promise<WireJson> {
  let actions
  try {
    const options: SendOptions = { signal, ...(onLateAnswer === undefined ? {} : { onLateAnswer }) }
    actions = await transport.send(trigger, options)
  } catch (error) {
    const retryable = typeof error === 'object' && error !== null && (error as { retryable?: unknown }).retryable === true
    throw new CallError(error instanceof Error ? error.message : String(error), { retryable, ...(retryable ? { code: 'provider_error' as const } : {}), cause: error })
  }
  const answer = actions.find((action) => action.type === 'tool.result' || action.type === 'tool.error')
  if (answer?.type === 'tool.result') return answer.result
  if (answer?.type === 'tool.error') throw new CallError(answer.error, { retryable: answer.retryable === true, ...(answer.code === undefined ? {} : { code: answer.code }) })
  throw new CallError(`the worker answered ${trigger.name} with no tool.result or tool.error for id ${trigger.id}`, { retryable: false })
}

/** What {@link callRemoteTool} needs. */
export interface RemoteToolCall {
  /** The call's id; each attempt's trigger carries it, so a late answer is recognised. */
  readonly id: string
  readonly name: string
  readonly arguments: WireJson
  /** The seed policy. @default no retry, no timeout (a call with no timeout waits as long as it takes). */
  readonly retry?: RetryPolicy | undefined
  readonly transport: TriggerTransport
  readonly clock?: RetryClock | undefined
  readonly signal?: AbortSignal | undefined
  /** Sees each trigger before it is sent (journal `tool_start` here). */
  readonly onTrigger?: ((trigger: ToolExecuteTrigger) => void) | undefined
  readonly onAttemptStart?: ((start: AttemptStart) => void) | undefined
  /** Sees each attempt's record (journal `tool_end` here). */
  readonly onAttempt?: ((record: AttemptRecord) => void) | undefined
  /** Sees a worker's answer to an attempt already given up on (its deadline passed): it is ignored otherwise. */
  readonly onLateAnswer?: ((late: { readonly attempt: number; readonly actions: Action[] }) => void) | undefined
}

/**
 * Calls a tool that lives with a worker, under the seed's rules: each
 * attempt sends a `tool.execute` trigger whose `deadline` is the attempt's
 * start plus `timeout_secs` (or null), a `tool.result` settles it, a
 * `tool.error` retries only when it says `retryable: true` (whatever its
 * `code`), a lapsed deadline always retries and is stamped
 * `deadline_exceeded`, and the delay before attempt n+1 is
 * `min(base^n, max)` seconds. An answer that arrives after its attempt's
 * deadline is ignored, and reported to `onLateAnswer`.
 */
export async function callRemoteTool(call: RemoteToolCall): Promise<RetryOutcome<WireJson>> {
  const policy = call.retry ?? DEFAULT_RETRY_POLICY
  return runWithRetry<WireJson>(
    async (attempt) => {
      const trigger: ToolExecuteTrigger = {
        type: 'tool.execute',
        id: call.id,
        attempt: attempt.attempt,
        deadline: attempt.deadline === null ? null : new Date(attempt.deadline).toISOString(),
        name: call.name,
        arguments: call.arguments,
      }
      call.onTrigger?.(trigger)
      const onLateAnswer = call.onLateAnswer
      return sendToolTrigger(call.transport, trigger, attempt.signal, onLateAnswer === undefined ? undefined : (actions) => {
        onLateAnswer({ attempt: attempt.attempt, actions })
      })
    },
    policy,
    {
      ...(call.clock === undefined ? {} : { clock: call.clock }),
      ...(call.signal === undefined ? {} : { signal: call.signal }),
      ...(call.onAttemptStart === undefined ? {} : { onAttemptStart: call.onAttemptStart }),
      ...(call.onAttempt === undefined ? {} : { onAttempt: call.onAttempt }),
    },
  )
}
