import type { FailureCause } from '@locus/outcome'
import { HostError, type TurnResult, type Usage } from '../host.js'

/** How one physical attempt ended. */
export type AttemptEnd =
  | { kind: 'answered'; answer: string; usedFallback: boolean; repaired?: ChoiceRepair; usage: Usage | undefined; stopReason: string }
  | { kind: 'failed'; failureCause: FailureCause; reason: string; usage: Usage | undefined; stopReason: string | undefined; choiceAnswers?: string[] }
  | { kind: 'threw'; failureCause: FailureCause; error: unknown }

/** How a choice answer was repaired, as `agent_end.repaired` records it. */
export interface ChoiceRepair {
  readonly from: string
  readonly to: string
  readonly via: 'clarification' | 'fallback'
}

/** The failure of a turn: its cause and the reason the journal gives. */
export interface TurnFailure {
  readonly failureCause: FailureCause
  readonly reason: string
}

export function addUsage(total: Usage | undefined, more: Usage | undefined): Usage | undefined {
  if (more === undefined) return total
  if (total === undefined) return more
  return { inputTokens: total.inputTokens + more.inputTokens, outputTokens: total.outputTokens + more.outputTokens }
}

/**
 * Decides on the typed cause, wherever it came from: `sdk-unavailable` means
 * there is no channel to answer on, so the call throws and never writes an
 * `agent_end`, whether the host threw it or returned it as a classified turn.
 */
export function throwsWhenUnavailable(end: AttemptEnd): AttemptEnd {
  if (end.kind !== 'failed' || end.failureCause !== 'sdk-unavailable') return end
  return { kind: 'threw', failureCause: 'sdk-unavailable', error: new HostError('sdk-unavailable', end.reason) }
}

/** Classifies a turn that came back without our fuse or a cancellation firing. */
export function classifyTurn(result: TurnResult): TurnFailure | undefined {
  if (result.failureCause !== undefined) return { failureCause: result.failureCause, reason: result.reason ?? result.failureCause }
  switch (result.stopReason) {
    case 'end':
      return undefined
    case 'length':
      return {
        failureCause: 'provider-error',
        reason: 'stopReason=length: the provider stopped at its output-token limit, so the answer is not exact text; it is kept in the transcript only',
      }
    case 'tool-call-budget':
      return { failureCause: 'tool-call-budget', reason: result.reason ?? 'the child exceeded its tool-call budget' }
    case 'content-filter':
      return { failureCause: 'provider-error', reason: result.reason ?? 'the provider filtered the answer' }
    case 'error':
      return { failureCause: 'provider-error', reason: result.reason ?? 'the provider reported an error' }
    case 'aborted':
      return { failureCause: 'unclassified', reason: result.reason ?? 'the host aborted the turn on its own' }
  }
}

/** The message of whatever an attempt threw. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
