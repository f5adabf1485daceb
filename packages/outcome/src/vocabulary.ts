import { z } from 'zod'

/**
 * Status strings that mark a returned value as a failure. Other status strings
 * keep their legacy success meaning.
 */
export const FAILURE_STATUSES = ['failed', 'blocked', 'cancelled'] as const
export type FailureStatus = (typeof FAILURE_STATUSES)[number]
export const FailureStatusSchema = z.enum(FAILURE_STATUSES)

/**
 * Why an `agent()` call failed, as a machine-readable field. It is set where
 * each cause is known and travels unchanged through `agent_end`, the result
 * envelope and the thrown error. A record written before the field existed
 * reads as `unclassified`.
 */
export const FAILURE_CAUSES = [
  'host-turn-timeout',
  'call-timeout',
  'sdk-unavailable',
  'cancelled',
  'tool-call-budget',
  'provider-error',
  'unparseable-answer',
  'empty-answer',
  'answer-too-long',
  'script-rejected',
  'unknown-agent',
  'workspace-allocation',
  'run-policy-blocked',
  'prompt-not-dispatched',
  'cost-budget',
  'unclassified',
] as const
export type FailureCause = (typeof FAILURE_CAUSES)[number]
export const FailureCauseSchema = z.enum(FAILURE_CAUSES)

/**
 * Labels on tool and LLM call failures. A code describes a failure; only the
 * failure's `retryable` flag decides whether it is retried.
 */
export const ERROR_CODES = ['provider_error', 'rate_limited', 'refused', 'budget_exceeded', 'deadline_exceeded'] as const
export type ErrorCode = (typeof ERROR_CODES)[number]
export const ErrorCodeSchema = z.enum(ERROR_CODES)

/** The durable disposition of a run: what every surface must agree on. */
export const RUN_DISPOSITIONS = ['completed', 'failed', 'cancelled'] as const
export type RunDisposition = (typeof RUN_DISPOSITIONS)[number]
export const RunDispositionSchema = z.enum(RUN_DISPOSITIONS)

/**
 * The answer outcome of a run, for metrics: a second axis beside the
 * disposition. A root result with `partial: true` is a `failed` disposition
 * and a `partial` answer outcome, counted in its own row, not as an error.
 */
export const ANSWER_OUTCOMES = ['complete', 'partial', 'cannot_answer', 'failed'] as const
export type AnswerOutcome = (typeof ANSWER_OUTCOMES)[number]
export const AnswerOutcomeSchema = z.enum(ANSWER_OUTCOMES)

/**
 * How much an answer depends on a step, declared on the plan: `required`
 * (without it the answer would be wrong), `enriching` (narrower but still
 * right), `confirming` (a double check; without it the answer carries a caveat).
 */
export const STEP_CRITICALITIES = ['required', 'enriching', 'confirming'] as const
export type StepCriticality = (typeof STEP_CRITICALITIES)[number]
export const StepCriticalitySchema = z.enum(STEP_CRITICALITIES)

/** Narrowing guard for {@link FailureCause}. */
export function isFailureCause(value: unknown): value is FailureCause {
  return typeof value === 'string' && (FAILURE_CAUSES as readonly string[]).includes(value)
}

/** Narrowing guard for {@link ErrorCode}. */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && (ERROR_CODES as readonly string[]).includes(value)
}

/** Narrowing guard for {@link FailureStatus}. */
export function isFailureStatus(value: unknown): value is FailureStatus {
  return typeof value === 'string' && (FAILURE_STATUSES as readonly string[]).includes(value)
}
