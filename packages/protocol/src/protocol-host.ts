import type { AgentHost, AgentSession, LlmAttemptRecord, SessionRequest, TranscriptEntry, TurnResult } from '@locus/host-contract'
import { type AttemptRecord, DEFAULT_RETRY_POLICY, type RetryPolicy, runWithRetry, systemClock } from '@locus/retry'
import { sendLlmTrigger } from './llm-trigger.js'
import { type ProtocolHostOptions, checkProtocolHostOptions } from './protocol-host-options.js'
import type { LlmExecuteTrigger, LlmMessage, LlmResultAction } from './wire-schemas.js'

/** How an attempt record reads as the host contract's LLM attempt, which the runtime journals as `llm_attempt`. */
function llmAttemptOf(record: AttemptRecord, turn: number, model: string, policy: RetryPolicy): LlmAttemptRecord {
  const failure = record.failure
  return {
    model,
    turn,
    step: 1,
    attempt: record.attempt,
    maxAttempts: policy.max_retries,
    outcome: record.outcome,
    durationMs: Math.max(0, record.endedAt - record.startedAt),
    streamed: false,
    ...(failure === undefined ? {} : { error: failure.error, retryable: failure.retryable }),
    ...(failure?.code === undefined ? {} : { code: failure.code }),
    ...(record.delayBeforeNextMs === undefined ? {} : { delayBeforeNextMs: record.delayBeforeNextMs }),
  }
}

function answerOf(result: LlmResultAction): Pick<TurnResult, 'text' | 'stopReason' | 'usage'> {
  return {
    text: result.text,
    stopReason: result.stop_reason ?? 'end',
    ...(result.usage === undefined ? {} : { usage: { inputTokens: result.usage.input_tokens, outputTokens: result.usage.output_tokens } }),
  }
}

/**
 * An `AgentHost` whose model lives with a worker, reached over the protocol:
 * each turn of a session sends the conversation so far as an `llm.execute`
 * trigger and settles on the worker's `llm.result` (text, stop reason,
 * usage) or `llm.error`. The LLM call runs under the seed's rules with the
 * agent config's `retry` (else `options.retry`, else no retry): an
 * `llm.error` retries only when it says `retryable: true`, a lapsed
 * `timeout_secs` always retries and is stamped `deadline_exceeded`, and
 * every attempt is reported in the turn's `llmAttempts`, which the runtime
 * journals as `llm_attempt` lines. A call that ends in failure is a
 * `provider-error` turn.
 *
 * @throws {ProtocolHostOptionsError} naming an option that cannot work.
 * @example
 * ```ts
 * const worker = createWorker({ tools: {}, llm: ({ messages }) => `you said ${messages.at(-1)?.content ?? ''}` })
 * const host = createProtocolHost({ transport: createInProcessTransport(worker) })
 * await runWorkflowScript(flow, { host })
 * ```
 */
export function createProtocolHost(options: ProtocolHostOptions): AgentHost {
  const checked = checkProtocolHostOptions(options)
  const clock = checked.clock ?? systemClock
  return {
    name: checked.name ?? 'protocol',
    specificationVersion: 'v1',
    settings: { transport: 'protocol', ...(checked.model === undefined ? {} : { model: checked.model }) },
    openSession(request: SessionRequest): AgentSession {
      const config = request.agentConfig
      const policy = config?.retry ?? checked.retry ?? DEFAULT_RETRY_POLICY
      const model = config?.model ?? checked.model
      const messages: LlmMessage[] = []
      const transcript: TranscriptEntry[] = []
      if (config?.system !== undefined && config.system !== '') {
        messages.push({ role: 'system', content: config.system })
        transcript.push({ role: 'system', content: config.system })
      }
      let turn = 0
      return {
        async prompt(text, { signal }) {
          turn += 1
          const thisTurn = turn
          messages.push({ role: 'user', content: text })
          transcript.push({ role: 'user', content: text })
          const sent = [...messages]
          const llmAttempts: LlmAttemptRecord[] = []
          const outcome = await runWithRetry(
            (attempt) => {
              const trigger: LlmExecuteTrigger = {
                type: 'llm.execute',
                id: `${request.callId}-llm${thisTurn}`,
                attempt: attempt.attempt,
                deadline: attempt.deadline === null ? null : new Date(attempt.deadline).toISOString(),
                agent: request.agent,
                ...(model === undefined ? {} : { model }),
                messages: sent,
              }
              return sendLlmTrigger(checked.transport, trigger, attempt.signal)
            },
            policy,
            { clock, signal, onAttempt: (record) => llmAttempts.push(llmAttemptOf(record, thisTurn, model ?? 'worker', policy)) },
          )
          if (outcome.ok) {
            const answer = answerOf(outcome.value)
            messages.push({ role: 'assistant', content: answer.text })
            transcript.push({ role: 'assistant', content: answer.text, stopReason: answer.stopReason })
            return { ...answer, llmAttempts }
          }
          const tries = outcome.attempts.length
          const reason = `the LLM call ${outcome.reason === 'cancelled' ? 'was cancelled' : `failed after ${tries} attempt${tries === 1 ? '' : 's'}`}: ${outcome.failure.error}`
          transcript.push({ role: 'assistant', content: '', stopReason: outcome.reason === 'cancelled' ? 'aborted' : 'error' })
          if (outcome.reason === 'cancelled') return { text: '', stopReason: 'aborted', reason, llmAttempts }
          return { text: '', stopReason: 'error', failureCause: 'provider-error', reason, llmAttempts }
        },
        transcript: () => [...transcript],
      }
    },
  }
}
