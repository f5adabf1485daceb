import { z } from 'zod'
import { PartialInputError, formatIssuePath } from './partial-error.js'

/**
 * Why a step failed, as data the retry decision reads.
 *
 * - `correctable`: the call can succeed if made again or made better (a
 *   malformed argument, a transient error the tool itself reported).
 * - `unavailable`: the dependency behind the tool is down or not answering.
 * - `forbidden`: the caller is not allowed to see this; retrying cannot help.
 * - `fatal`: anything else that will fail the same way again.
 */
export const FAILURE_CLASSES = ['correctable', 'unavailable', 'forbidden', 'fatal'] as const
export type FailureClass = (typeof FAILURE_CLASSES)[number]
/** zod enum of {@link FailureClass}. */
export const FailureClassSchema = z.enum(FAILURE_CLASSES)

/** The step ran and found something. */
export interface ToolFound<TData = unknown> {
  readonly ok: true
  readonly state: 'found'
  readonly data: TData
}

/** The step ran and found nothing: a fact about the world, not a gap. */
export interface ToolEmpty<TData = unknown> {
  readonly ok: true
  readonly state: 'empty'
  /** What the tool returned, kept as evidence (`[]`, `null`, `{ total: 0 }`). */
  readonly data: TData
}

/** The step did not answer: a gap in what the run knows. */
export interface ToolFailed {
  readonly ok: false
  /** Why it failed, which decides whether a retry may help. */
  readonly class: FailureClass
  /** What went wrong, in words; it becomes the gap's reason. */
  readonly error: string
}

/** A step that answered, with or without data. */
export type ToolSucceeded<TData = unknown> = ToolFound<TData> | ToolEmpty<TData>

/**
 * The result of one plan step. Discriminated on `ok`, and for ok results on
 * `state`, so that "found nothing" and "could not look" can never be mixed up:
 * a failed result has no data to be mistaken for an empty list.
 */
export type ToolResult<TData = unknown> = ToolFound<TData> | ToolEmpty<TData> | ToolFailed

/** A successful result with data. */
export function toolFound<TData>(data: TData): ToolFound<TData> {
  return { ok: true, state: 'found', data }
}

/**
 * A successful result that found nothing.
 * @default data `[]`
 */
export function toolEmpty<TData = readonly never[]>(data?: TData): ToolEmpty<TData> {
  return { ok: true, state: 'empty', data: (data === undefined ? [] : data) as TData }
}

/** A failed result: the step did not answer. */
export function toolFailed(failureClass: FailureClass, error: string): ToolFailed {
  return { ok: false, class: failureClass, error }
}

/**
 * A successful result whose state is read from the data: `empty` for `null`,
 * `undefined`, `''`, an empty array, an empty Map or Set, or an object with no
 * own keys; `found` otherwise. Use {@link toolEmpty} when emptiness lives
 * deeper (`{ items: [], total: 0 }`).
 *
 * @example
 * ```ts
 * toolOk(await tickets.search(customer)) // [] -> { ok: true, state: 'empty', data: [] }
 * ```
 */
export function toolOk<TData>(data: TData): ToolSucceeded<TData> {
  return isEmptyData(data) ? { ok: true, state: 'empty', data } : { ok: true, state: 'found', data }
}

/** True for data that carries nothing: see {@link toolOk} for the exact list. */
export function isEmptyData(data: unknown): boolean {
  if (data === null || data === undefined || data === '') return true
  if (Array.isArray(data)) return data.length === 0
  if (data instanceof Map || data instanceof Set) return data.size === 0
  if (typeof data === 'object') return Object.getPrototypeOf(data) === Object.prototype && Object.keys(data).length === 0
  return false
}

/**
 * True when the step answered and found nothing. A failed step is never
 * empty: it did not look, so it is a gap, not an absence.
 */
export function isEmptyResult<TData>(result: ToolResult<TData> | undefined): result is ToolEmpty<TData> {
  return result?.ok === true && result.state === 'empty'
}

/** zod schema of a {@link ToolResult}, for results read back from JSON. */
export const ToolResultSchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), state: z.enum(['found', 'empty']), data: z.unknown() }),
  z.object({ ok: z.literal(false), class: FailureClassSchema, error: z.string() }),
])

/**
 * Checks a tool result read from outside (a journal line, a worker) and
 * returns it typed, or throws {@link PartialInputError} naming the field.
 */
export function parseToolResult(value: unknown, field = 'result'): ToolResult {
  const parsed = ToolResultSchema.safeParse(value)
  if (parsed.success) return parsed.data
  const issue = parsed.error.issues[0]
  throw new PartialInputError(
    formatIssuePath(field, issue?.path ?? []),
    `${issue?.message ?? 'not a tool result'}. Expected { ok: true, state: 'found' | 'empty', data } or { ok: false, class, error } with class one of ${FAILURE_CLASSES.join(', ')}.`,
    parsed.error,
  )
}
