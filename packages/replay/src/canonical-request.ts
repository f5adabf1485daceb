import { z } from 'zod'
import { CanonicalRequestError } from './replay-errors.js'
import { zodProblems } from './zod-problems.js'

/**
 * The identity fields of a logical `agent()` call, in the order reports list
 * them. Two calls with equal values for these fields are the same request;
 * nothing else about a call (its `attempts`, `label`, `phase`, or any field
 * added later) changes what replay compares.
 */
export const CANONICAL_REQUEST_FIELDS = [
  'agent',
  'prompt',
  'choice',
  'choiceFallback',
  'timeoutMs',
  'budgets',
  'returnContractVersion',
] as const
export type CanonicalRequestField = (typeof CANONICAL_REQUEST_FIELDS)[number]

/** A per-call budget: a number, `null` for "no limit", or a nested group of budgets. */
export type BudgetValue = number | null | { readonly [name: string]: BudgetValue }

/** A budget as a caller may pass it: like {@link BudgetValue}, with `undefined` members that are dropped. */
export type BudgetInput = number | null | undefined | { readonly [name: string]: BudgetInput }

/** The per-call budgets of one call, e.g. `{ maxToolCalls: 20, maxOutputTokens: 8000 }`. */
export interface CallBudgetsRecord {
  readonly [name: string]: BudgetValue
}

/**
 * The flat options of one `agent()` call as the runtime sees them: the
 * identity fields plus anything else (`attempts`, `label`, `phase`, or any
 * other option the runtime keeps on the object), which canonicalization drops.
 */
export interface AgentCallRequest {
  /** The agent role, resolved to its catalog name. */
  readonly agent?: string | undefined
  readonly prompt: string
  /** The declared exact choices, in declaration order. */
  readonly choice?: readonly string[] | undefined
  readonly choiceFallback?: string | undefined
  readonly timeoutMs?: number | undefined
  readonly budgets?: { readonly [name: string]: BudgetInput } | undefined
  /** Version of the result contract the call was made under. */
  readonly returnContractVersion?: string | number | undefined
  /** Transport retry budget. Never part of identity. */
  readonly attempts?: number | undefined
  /** Descriptive only. Never part of identity. */
  readonly label?: string | undefined
  /** Descriptive only. Never part of identity. */
  readonly phase?: string | undefined
}

/**
 * The canonical request of a logical `agent()` call: only the identity
 * fields, with absent (`undefined`) fields left out. Its RFC 8785 JSON is what
 * `requestKey` hashes.
 */
export interface CanonicalRequest {
  readonly agent?: string
  readonly prompt: string
  readonly choice?: readonly string[]
  readonly choiceFallback?: string
  readonly timeoutMs?: number
  readonly budgets?: CallBudgetsRecord
  readonly returnContractVersion?: string | number
}

// `undefined` members are accepted and then dropped, as JSON would drop them.
const BudgetInputSchema: z.ZodType<BudgetInput> = z.lazy(() =>
  z.union([
    z.number('a budget must be a finite number, null for no limit, or an object of budgets'),
    z.null(),
    z.undefined(),
    z.record(z.string(), BudgetInputSchema),
  ]),
)

const CanonicalRequestSchema = z.object({
  agent: z.string('agent must be the role name, a string').min(1, 'agent must not be empty').optional(),
  prompt: z.string('prompt must be a string'),
  choice: z
    .array(z.string('each choice must be a string'), 'choice must be an array of strings')
    .min(1, 'choice must list at least one value')
    .optional(),
  choiceFallback: z.string('choiceFallback must be a string').optional(),
  timeoutMs: z.number('timeoutMs must be a finite number of milliseconds').positive('timeoutMs must be greater than 0').optional(),
  budgets: z.record(z.string(), BudgetInputSchema, 'budgets must be an object of named budgets').optional(),
  returnContractVersion: z
    .union(
      [z.string().min(1, 'returnContractVersion must not be empty'), z.int().min(0, 'returnContractVersion must not be negative')],
      'returnContractVersion must be a string or a whole number',
    )
    .optional(),
})

function withoutUndefined(budgets: { readonly [name: string]: BudgetInput }): CallBudgetsRecord {
  const out: Record<string, BudgetValue> = {}
  for (const [name, value] of Object.entries(budgets)) {
    if (value === undefined) continue
    out[name] = value !== null && typeof value === 'object' ? withoutUndefined(value) : value
  }
  return out
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const prototype = Object.getPrototypeOf(value) as unknown
  return prototype === Object.prototype || prototype === null
}

/** Finds budget members that are objects but not plain ones (a Date, a Map), which zod's record would accept. */
function findNonPlainBudget(value: unknown, path: string): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  if (!isPlainRecord(value)) return path
  for (const [name, member] of Object.entries(value)) {
    const found = findNonPlainBudget(member, `${path}.${name}`)
    if (found !== undefined) return found
  }
  return undefined
}

/**
 * Keeps the identity fields of an `agent()` call and drops everything else.
 *
 * Identity is: the agent role, the prompt, the choice declaration (`choice`
 * and `choiceFallback`), `timeoutMs`, the per-call `budgets` and the
 * `returnContractVersion`. `attempts` never joins it, so declaring a retry
 * budget keeps the key a recording already has; `label`, `phase` and any
 * unknown field are descriptive and dropped too. Fields that are `undefined`
 * are left out, so `{ timeoutMs: undefined }` and `{}` are the same request.
 *
 * @throws {CanonicalRequestError} code `REPLAY_REQUEST_INVALID`, naming the
 * field, when an identity field is not what it must be (a prompt that is not a
 * string, a `timeoutMs` of 0, a budget of `NaN`...).
 *
 * @example
 * ```ts
 * canonicalRequest({ agent: 'analyst', prompt: 'Summarise', attempts: 3, label: 'history' })
 * // => { agent: 'analyst', prompt: 'Summarise' }
 * ```
 */
export function canonicalRequest(call: AgentCallRequest): CanonicalRequest {
  if (!isPlainRecord(call)) {
    throw new CanonicalRequestError([{ field: 'request', message: 'the call must be a plain object of options' }])
  }
  const parsed = CanonicalRequestSchema.safeParse(call)
  if (!parsed.success) throw new CanonicalRequestError(zodProblems(parsed.error, 'request'), parsed.error)
  const identity = parsed.data
  const request: {
    -readonly [TField in keyof CanonicalRequest]: CanonicalRequest[TField]
  } = identity.agent === undefined ? { prompt: identity.prompt } : { agent: identity.agent, prompt: identity.prompt }
  if (identity.choice !== undefined) request.choice = identity.choice
  if (identity.choiceFallback !== undefined) request.choiceFallback = identity.choiceFallback
  if (identity.timeoutMs !== undefined) request.timeoutMs = identity.timeoutMs
  if (identity.budgets !== undefined) {
    const nonPlain = findNonPlainBudget(call.budgets, 'budgets')
    if (nonPlain !== undefined) {
      throw new CanonicalRequestError([{ field: nonPlain, message: 'a budget group must be a plain object' }])
    }
    request.budgets = withoutUndefined(identity.budgets)
  }
  if (identity.returnContractVersion !== undefined) request.returnContractVersion = identity.returnContractVersion
  return request
}
