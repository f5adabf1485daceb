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
 * The class a failed result gets when it names none: `fatal`. Nothing says
 * that a repeated call would go differently, so `shouldRetryStep` does
 * not retry it, as the specification's own check
 * (`class !== 'correctable' && class !== 'unavailable'`) would not.
 */
export const DEFAULT_FAILURE_CLASS: FailureClass = 'fatal'

/**
 * The specification's success shape, `{ ok: true, data }`, without `state`:
 * every reader in this package reads its emptiness from `data` exactly as
 * {@link toolOk} does, so `{ ok: true, data: [] }` is `empty` everywhere.
 */
export interface PlainToolOk<TData = unknown> {
  readonly ok: true
  readonly data?: TData
  readonly state?: undefined
}

/**
 * The specification's failure shape, `{ ok: false, error }`: without `class`
 * it is {@link DEFAULT_FAILURE_CLASS} (`fatal`) everywhere.
 */
export interface PlainToolFailed {
  readonly ok: false
  readonly error: string
  readonly class?: FailureClass
}

/**
 * Every shape a reader of this package accepts: a {@link ToolResult}, or the
 * specification's plain `{ ok: true, data }` and `{ ok: false, error }`.
 * {@link parseToolResult} turns any of them into a {@link ToolResult}.
 */
export type ToolResultInput<TData = unknown> = ToolResult<TData> | PlainToolOk<TData> | PlainToolFailed

/**
 * True when the step answered and found nothing. A failed step is never
 * empty: it did not look, so it is a gap, not an absence. A plain
 * `{ ok: true, data }` is empty exactly when {@link toolOk} would call its
 * data empty. Throws {@link PartialInputError} for a value that is no tool
 * result at all, as every other reader does.
 */
export function isEmptyResult<TData>(result: ToolResult<TData> | undefined): result is ToolEmpty<TData>
export function isEmptyResult(result: ToolResultInput | undefined): boolean
export function isEmptyResult(result: ToolResultInput | undefined): boolean {
  if (result === undefined) return false
  const parsed = parseToolResult(result)
  return parsed.ok && parsed.state === 'empty'
}

const ToolResultInputSchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), state: z.enum(['found', 'empty']).optional(), data: z.unknown() }),
  z.object({ ok: z.literal(false), class: FailureClassSchema.optional(), error: z.string() }),
])

/**
 * zod schema of a {@link ToolResult}, for results read back from JSON. It
 * accepts every {@link ToolResultInput} shape and outputs the canonical one:
 * `state` read from `data` when absent, `class` {@link DEFAULT_FAILURE_CLASS}
 * when absent.
 */
export const ToolResultSchema: z.ZodType<ToolResult> = ToolResultInputSchema.transform(canonical)

function canonical(value: z.output<typeof ToolResultInputSchema>): ToolResult {
  if (value.ok) return value.state === undefined ? toolOk(value.data) : { ok: true, state: value.state, data: value.data }
  return toolFailed(value.class ?? DEFAULT_FAILURE_CLASS, value.error)
}

function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null
}

function isFailureClass(value: unknown): value is FailureClass {
  return (FAILURE_CLASSES as readonly unknown[]).includes(value)
}

/**
 * Reads a tool result in any accepted shape and returns it canonical, or
 * throws {@link PartialInputError} naming the field. It is the one reading
 * every other function of this package goes through, so they all agree:
 *
 * - `{ ok: true, state, data }` is returned as it is;
 * - `{ ok: true, data }` becomes {@link toolOk}`(data)`: `empty` for `[]`,
 *   `{}`, `null`, `undefined`, `''` and empty Maps and Sets, `found` otherwise;
 * - `{ ok: false, class, error }` is returned as it is;
 * - `{ ok: false, error }` becomes `{ ok: false, class: 'fatal', error }`
 *   ({@link DEFAULT_FAILURE_CLASS}).
 *
 * @example
 * ```ts
 * parseToolResult({ ok: true, data: [] }) // { ok: true, state: 'empty', data: [] }
 * parseToolResult({ ok: false, error: 'timed out' }) // { ok: false, class: 'fatal', error: 'timed out' }
 * ```
 */
export function parseToolResult<TData>(value: ToolResultInput<TData>, field?: string): ToolResult<TData>
export function parseToolResult(value: unknown, field?: string): ToolResult
export function parseToolResult(value: unknown, field = 'result'): ToolResult {
  // The shapes every reader sees on its hot path are checked by hand; zod only
  // runs to name the field of a value that is none of them.
  if (isRecord(value)) {
    if (value.ok === true) {
      if (value.state === 'found' || value.state === 'empty') return value as unknown as ToolResult
      if (value.state === undefined) return toolOk(value.data)
    } else if (value.ok === false && typeof value.error === 'string') {
      if (value.class === undefined) return toolFailed(DEFAULT_FAILURE_CLASS, value.error)
      if (isFailureClass(value.class)) return value as unknown as ToolFailed
    }
  }
  const parsed = ToolResultSchema.safeParse(value)
  if (parsed.success) return parsed.data
  const issue = parsed.error.issues[0]
  throw new PartialInputError(
    formatIssuePath(field, issue?.path ?? []),
    `${issue?.message ?? 'not a tool result'}. Expected { ok: true, data } (emptiness read from data), { ok: true, state: 'found' | 'empty', data }, ` +
      `or { ok: false, error } with an optional class, one of ${FAILURE_CLASSES.join(', ')} (default ${DEFAULT_FAILURE_CLASS}).`,
    parsed.error,
  )
}
