import type { LlmUsageRecord } from '@locus/host-contract'
import type { LlmAttemptRecord, SessionRequest } from '../host.js'
import type { RunState } from '../run-state.js'
import { priceRequest } from './attempt-cost.js'

/**
 * Journals each LLM request attempt a host reports for a turn as an
 * `llm_attempt` line under the agent attempt, so a role's own retries are
 * visible apart from the call's. A record the line schema refuses is reported
 * as a warning, never allowed to fail the call.
 */
export function recordLlmAttempts(run: RunState, request: SessionRequest, attemptsOfCall: number, attempts: readonly LlmAttemptRecord[] | undefined): void {
  if (attempts === undefined) return
  for (const record of attempts) {
    try {
      const cost = priceRequest(run, request.callId, record.model, record.usage)
      run.emit({
        type: 'llm_attempt',
        callId: request.callId,
        logicalCallId: request.logicalCallId,
        attempt: request.attempt,
        attempts: Math.max(attemptsOfCall, request.attempt),
        agent: request.agent,
        model: record.model,
        turn: record.turn,
        step: record.step,
        llmAttempt: record.attempt,
        llmMaxAttempts: Math.max(record.maxAttempts, record.attempt),
        outcome: record.outcome,
        durationMs: Math.max(0, record.durationMs),
        streamed: record.streamed,
        ...(record.code === undefined ? {} : { code: record.code }),
        ...(record.status === undefined ? {} : { status: record.status }),
        ...(record.error === undefined ? {} : { error: record.error }),
        ...(record.retryable === undefined ? {} : { retryable: record.retryable }),
        ...(record.retryAfterMs === undefined ? {} : { retryAfterMs: record.retryAfterMs }),
        ...(record.delayBeforeNextMs === undefined ? {} : { delayBeforeNextMs: record.delayBeforeNextMs }),
        ...(record.timeToFirstTokenMs === undefined ? {} : { timeToFirstTokenMs: record.timeToFirstTokenMs }),
        ...(record.turnBudget === undefined ? {} : { turnBudget: record.turnBudget }),
        ...(record.usage === undefined ? {} : { usage: usageLine(record.usage) }),
        ...(cost === undefined ? {} : { cost }),
      })
    } catch (error) {
      run.emit({ type: 'log', level: 'warn', message: `the host reported an LLM attempt the journal cannot hold: ${error instanceof Error ? error.message : String(error)}` })
    }
  }
}

/** A request's usage as the journal keeps it: the totals, and each detail count the host reported. */
function usageLine(usage: LlmUsageRecord): LlmUsageRecord {
  const line: { inputTokens: number; outputTokens: number; cacheReadTokens?: number; cacheWriteTokens?: number; reasoningTokens?: number } = { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens }
  if (usage.cacheReadTokens !== undefined) line.cacheReadTokens = usage.cacheReadTokens
  if (usage.cacheWriteTokens !== undefined) line.cacheWriteTokens = usage.cacheWriteTokens
  if (usage.reasoningTokens !== undefined) line.reasoningTokens = usage.reasoningTokens
  return line
}
