import { ERROR_CODES } from '@locus/outcome'
import { RetryPolicySchema } from '@locus/retry'
import { z } from 'zod'

/**
 * A JSON value as it travels on the wire: what `arguments`, `input` and
 * `result` may hold. Functions, `undefined`, `NaN` and class instances do not
 * survive `JSON.stringify`, so they are refused where they would be lost.
 */
export type WireJson = string | number | boolean | null | WireJson[] | { [key: string]: WireJson }

export const WireJsonSchema: z.ZodType<WireJson> = z.lazy(() =>
  z.union([z.string(), z.number().refine(Number.isFinite, 'must be a finite number'), z.boolean(), z.null(), z.array(WireJsonSchema), z.record(z.string(), WireJsonSchema)]),
)

/** The seed's failure labels; `code` names a failure but never decides a retry. */
export const ErrorCodeSchema = z.enum(ERROR_CODES)

/** The seed's retry policy, with every field required and unknown fields refused. */
export { RetryPolicySchema }

/** An id the engine gave a call or a trigger; workers echo it back. */
const IdSchema = z.string().min(1, 'must be a non-empty string').max(256, 'must be at most 256 characters')

/** An absolute instant (ISO 8601 with a zone), or null for "waits indefinitely". */
export const DeadlineSchema = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 time with a zone, or null' }).nullable()

const policy = { retry: RetryPolicySchema.optional() }

/** An agent's chat message, as an `llm.execute` trigger carries its conversation. */
export const LlmMessageSchema = z.strictObject({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
})

/** Token usage reported with an `llm.result`. */
export const LlmUsageSchema = z.strictObject({
  input_tokens: z.number().int().min(0),
  output_tokens: z.number().int().min(0),
})

// ---- Actions: what a script, a model or a worker asks the engine to do, or answers.

export const ToolCallActionSchema = z.strictObject({
  type: z.literal('tool.call'),
  id: IdSchema.optional(),
  name: z.string().min(1, 'must name the tool'),
  arguments: WireJsonSchema,
  ...policy,
})

export const LlmCallActionSchema = z.strictObject({
  type: z.literal('llm.call'),
  id: IdSchema.optional(),
  agent: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  messages: z.array(LlmMessageSchema).min(1, 'must hold at least one message'),
  ...policy,
})

export const SubAgentSpawnActionSchema = z.strictObject({
  type: z.literal('sub_agent.spawn'),
  id: IdSchema.optional(),
  workflow: z.string().min(1, 'must name a saved workflow'),
  input: WireJsonSchema,
  label: z.string().optional(),
  ...policy,
})

export const ToolResultActionSchema = z.strictObject({
  type: z.literal('tool.result'),
  id: IdSchema,
  result: WireJsonSchema,
})

/** Terminal unless `retryable` is exactly true. */
export const ToolErrorActionSchema = z.strictObject({
  type: z.literal('tool.error'),
  id: IdSchema,
  error: z.string(),
  retryable: z.boolean().optional(),
  code: ErrorCodeSchema.optional(),
})

export const LlmResultActionSchema = z.strictObject({
  type: z.literal('llm.result'),
  id: IdSchema,
  text: z.string(),
  stop_reason: z.enum(['end', 'length', 'content-filter']).optional(),
  usage: LlmUsageSchema.optional(),
})

export const LlmErrorActionSchema = z.strictObject({
  type: z.literal('llm.error'),
  id: IdSchema,
  error: z.string(),
  retryable: z.boolean().optional(),
  code: ErrorCodeSchema.optional(),
})

export const ACTION_TYPES = ['tool.call', 'llm.call', 'sub_agent.spawn', 'tool.result', 'tool.error', 'llm.result', 'llm.error'] as const

export const ActionSchema = z.discriminatedUnion('type', [
  ToolCallActionSchema,
  LlmCallActionSchema,
  SubAgentSpawnActionSchema,
  ToolResultActionSchema,
  ToolErrorActionSchema,
  LlmResultActionSchema,
  LlmErrorActionSchema,
])

// ---- Triggers: what the engine sends a worker, one per physical attempt.

export const ToolExecuteTriggerSchema = z.strictObject({
  type: z.literal('tool.execute'),
  id: IdSchema,
  attempt: z.number().int().min(1),
  deadline: DeadlineSchema,
  name: z.string().min(1),
  arguments: WireJsonSchema,
})

export const LlmExecuteTriggerSchema = z.strictObject({
  type: z.literal('llm.execute'),
  id: IdSchema,
  attempt: z.number().int().min(1),
  deadline: DeadlineSchema,
  agent: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  messages: z.array(LlmMessageSchema).min(1),
})

export const TRIGGER_TYPES = ['tool.execute', 'llm.execute'] as const

export const TriggerSchema = z.discriminatedUnion('type', [ToolExecuteTriggerSchema, LlmExecuteTriggerSchema])

/** What a worker returns for a trigger, as the seed writes it: `return { actions: [...] }`. */
export const WorkerResponseSchema = z.strictObject({ actions: z.array(ActionSchema) })

// ---- Calls: the engine's view of one logical call across its attempts.

/**
 * Where a call stands. `waiting` is a call with no deadline whose answer has
 * not come (a deferred or client-side tool); `retrying` sits between a
 * retryable failure and the next attempt.
 */
export const CALL_STATUSES = ['pending', 'running', 'waiting', 'retrying', 'succeeded', 'failed', 'cancelled'] as const
export const CallStatusSchema = z.enum(CALL_STATUSES)

export const CALL_KINDS = ['tool', 'llm', 'sub_agent'] as const

export const CallSchema = z.strictObject({
  id: IdSchema,
  kind: z.enum(CALL_KINDS),
  name: z.string().min(1),
  status: CallStatusSchema,
  attempt: z.number().int().min(0),
  retry: RetryPolicySchema,
  deadline: DeadlineSchema,
  result: WireJsonSchema.optional(),
  error: z
    .strictObject({ error: z.string(), retryable: z.boolean(), code: ErrorCodeSchema.optional() })
    .optional(),
})

export type ErrorCode = z.infer<typeof ErrorCodeSchema>
export type LlmMessage = z.infer<typeof LlmMessageSchema>
export type ToolCallAction = z.infer<typeof ToolCallActionSchema>
export type LlmCallAction = z.infer<typeof LlmCallActionSchema>
export type SubAgentSpawnAction = z.infer<typeof SubAgentSpawnActionSchema>
export type ToolResultAction = z.infer<typeof ToolResultActionSchema>
export type ToolErrorAction = z.infer<typeof ToolErrorActionSchema>
export type LlmResultAction = z.infer<typeof LlmResultActionSchema>
export type LlmErrorAction = z.infer<typeof LlmErrorActionSchema>
export type Action = z.infer<typeof ActionSchema>
export type ActionType = Action['type']
export type ToolExecuteTrigger = z.infer<typeof ToolExecuteTriggerSchema>
export type LlmExecuteTrigger = z.infer<typeof LlmExecuteTriggerSchema>
export type Trigger = z.infer<typeof TriggerSchema>
export type TriggerType = Trigger['type']
export type WorkerResponse = z.infer<typeof WorkerResponseSchema>
export type CallStatus = z.infer<typeof CallStatusSchema>
export type CallKind = (typeof CALL_KINDS)[number]
export type Call = z.infer<typeof CallSchema>
