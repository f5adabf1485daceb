import { FailureCauseSchema, LocusError, hasLocusErrorCode } from '@locus/outcome'
import { z } from 'zod'
import { JsonValueSchema } from './json-value-schema.js'
import { ATTEMPT_TRIO_FIELDS } from './journal-line-schema.js'

/** The `schema` tag of the per-call result envelope. */
export const AGENT_RESULT_SCHEMA = 'locus.agent.run-result.v2'

export const AGENT_RESULT_INVALID = 'AGENT_RESULT_INVALID'

/**
 * The per-call result envelope as stored: the durable record of one physical
 * attempt, written to the attempt's result directory. `failureCause` is
 * optional here only because bodies written before it existed lack it;
 * {@link parseAgentResultEnvelope} fills it in.
 */
export const AgentResultEnvelopeSchema = z
  .object({
    schema: z.literal(AGENT_RESULT_SCHEMA),
    callId: z.string().min(1),
    logicalCallId: z.string().min(1),
    attempt: z.int().min(1),
    attempts: z.int().min(1),
    agent: z.string().min(1),
    status: z.enum(['completed', 'failed']),
    failureCause: FailureCauseSchema.optional(),
    reason: z.string().optional(),
    answer: JsonValueSchema.optional().describe('The text or chosen value, when completed.'),
    stopReason: z.string().optional(),
    usage: z.object({ inputTokens: z.int().min(0), outputTokens: z.int().min(0) }).optional(),
    paths: z.object({ transcriptDir: z.string().min(1), resultDir: z.string().min(1) }),
    ordinal: z.string().min(1).optional(),
    requestKey: z.string().optional(),
  })
  .refine((envelope) => envelope.attempt <= envelope.attempts, { error: 'attempt must not exceed attempts', path: ['attempt'] })
  .refine((envelope) => envelope.status === 'failed' || envelope.failureCause === undefined, {
    error: 'a completed result carries no failureCause',
    path: ['failureCause'],
  })
  .meta({ id: 'AgentResultEnvelope' })

/** An envelope as written to disk: what a writer builds (`failureCause` set whenever `status` is `failed`). */
export type AgentResultEnvelopeBody = z.output<typeof AgentResultEnvelopeSchema>
type StoredEnvelope = AgentResultEnvelopeBody

/** A completed attempt. */
export type CompletedAgentResult = Omit<StoredEnvelope, 'status' | 'failureCause'> & { status: 'completed'; failureCause?: undefined }
/** A failed attempt; its cause is always known once parsed (`unclassified` for old bodies). */
export type FailedAgentResult = Omit<StoredEnvelope, 'status' | 'failureCause'> & {
  status: 'failed'
  failureCause: NonNullable<StoredEnvelope['failureCause']>
}
/** The per-call result envelope `locus.agent.run-result.v2`, as {@link parseAgentResultEnvelope} returns it. */
export type AgentResultEnvelope = CompletedAgentResult | FailedAgentResult

/** A body that is not a valid `locus.agent.run-result.v2` envelope. */
export class AgentResultEnvelopeError extends LocusError {
  declare readonly code: typeof AGENT_RESULT_INVALID
  readonly problems: readonly string[]
  /** Attempt-trio fields the body lacks, when that is why it was refused. */
  readonly missing: readonly string[] | undefined

  constructor(problems: readonly string[], missing?: readonly string[], cause?: unknown) {
    super(`Invalid ${AGENT_RESULT_SCHEMA} result envelope: ${problems.join('; ')}.`, { code: AGENT_RESULT_INVALID, cause })
    this.name = 'AgentResultEnvelopeError'
    this.problems = problems
    this.missing = missing
  }

  static override isInstance(value: unknown): value is AgentResultEnvelopeError {
    return hasLocusErrorCode(value, AGENT_RESULT_INVALID)
  }
}

/**
 * Reads a persisted result envelope. A failed body written before
 * `failureCause` existed reads as `failureCause: 'unclassified'`, which is
 * never retried. A body written before attempts existed (no trio at all) reads
 * as attempt 1 of 1 of its own logical call; a body with part of the trio is
 * refused, as journal lines are.
 *
 * @throws {AgentResultEnvelopeError} code `AGENT_RESULT_INVALID`, naming each field.
 *
 * @example
 * ```ts
 * const envelope = parseAgentResultEnvelope(JSON.parse(readFileSync(join(call.resultDir, 'result.json'), 'utf8')))
 * if (envelope.status === 'failed') console.log(envelope.failureCause)
 * ```
 */
export function parseAgentResultEnvelope(value: unknown): AgentResultEnvelope {
  let candidate = value
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const record = value as Record<string, unknown>
    const missing = ATTEMPT_TRIO_FIELDS.filter((field) => record[field] === undefined)
    if (missing.length === ATTEMPT_TRIO_FIELDS.length) {
      candidate = { ...record, attempt: 1, attempts: 1, logicalCallId: record.callId }
    } else if (missing.length > 0) {
      throw new AgentResultEnvelopeError(
        [`attempt, attempts and logicalCallId travel together; ${missing.join(', ')} missing`],
        missing,
      )
    }
  }
  const parsed = AgentResultEnvelopeSchema.safeParse(candidate)
  if (!parsed.success) {
    const problems =
      typeof value !== 'object' || value === null || Array.isArray(value)
        ? ['expected a JSON object']
        : parsed.error.issues.map((issue) => `${issue.path.map(String).join('.') || 'envelope'}: ${issue.message}`)
    throw new AgentResultEnvelopeError(problems, undefined, parsed.error)
  }
  const envelope = parsed.data
  if (envelope.status === 'failed') return { ...envelope, status: 'failed', failureCause: envelope.failureCause ?? 'unclassified' }
  return { ...envelope, status: 'completed' } as CompletedAgentResult
}
