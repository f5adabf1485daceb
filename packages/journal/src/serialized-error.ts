import {
  LocusError,
  UNKNOWN_ERROR_CODE,
  WorkflowResultPreparationError,
  PREPARATION_FAILURE_REASONS,
  prepareWorkflowResult,
  type JsonValue,
  type PreparationFailureReason,
} from '@locus/outcome'
import { z } from 'zod'
import { JsonValueSchema } from './json-value-schema.js'

/**
 * An error as it crosses the journal: plain JSON that another process, or a
 * reader in another language, can inspect and that {@link deserializeError}
 * turns back into an error.
 */
export interface SerializedError {
  /** The error's class name, e.g. `WorkflowGroupFailureError`; the key of the factory registry. */
  name: string
  /** Stable machine-readable code (`UNKNOWN_ERROR` when the thrown value had none). */
  code: string
  message: string
  /** The error's `cause`: another serialized error, or a JSON value when the cause was not an error. */
  cause?: SerializedError | JsonValue | undefined
  /** The error's other own fields (e.g. `reason`, `path`, `failureCause`), where they are JSON-safe. */
  data?: { [key: string]: JsonValue } | undefined
  /** The stack trace at the point of the throw, for diagnosis only. */
  stack?: string | undefined
}

/** Schema of {@link SerializedError}; `cause` nests recursively. */
export const SerializedErrorSchema: z.ZodType<SerializedError> = z
  .object({
    name: z.string().min(1).describe('Class name of the error; the key its factory is registered under.'),
    code: z.string().min(1).describe('Stable machine-readable code; UNKNOWN_ERROR when the thrown value had none.'),
    message: z.string(),
    get cause() {
      return z
        .union([SerializedErrorSchema, JsonValueSchema])
        .optional()
        .describe('The cause: a serialized error, or a JSON value when the cause was not an error.')
    },
    data: z.record(z.string(), JsonValueSchema).optional().describe('Other JSON-safe own fields of the error.'),
    stack: z.string().optional(),
  })
  .meta({ id: 'SerializedError' })

/** Rebuilds an error from its serialized form. */
export type ErrorFactory = (serialized: SerializedError) => Error

const REGISTRY_KEY = Symbol.for('locus.journal.error-factories')

/**
 * The registry lives on `globalThis` under a registered symbol, so that two
 * installed copies of this package share one set of factories, as
 * `LocusError.isInstance` already works across copies.
 */
function registry(): Map<string, ErrorFactory> {
  const holder = globalThis as { [REGISTRY_KEY]?: Map<string, ErrorFactory> }
  let factories = holder[REGISTRY_KEY]
  if (factories === undefined) {
    factories = new Map()
    holder[REGISTRY_KEY] = factories
  }
  return factories
}

/** Factories for errors defined by packages this one already depends on. */
const BUILT_IN_FACTORIES: ReadonlyMap<string, ErrorFactory> = new Map<string, ErrorFactory>([
  [
    'WorkflowResultPreparationError',
    (serialized) => {
      const reason = serialized.data?.reason
      const path = serialized.data?.path
      if (!isPreparationReason(reason) || typeof path !== 'string') throw new Error('reason or path missing')
      return new WorkflowResultPreparationError(reason, path, rebuildCause(serialized.cause))
    },
  ],
])

function isPreparationReason(value: unknown): value is PreparationFailureReason {
  return typeof value === 'string' && (PREPARATION_FAILURE_REASONS as readonly string[]).includes(value)
}

/** The code registerErrorFactory throws for a name or factory that is not one. */
export const ERROR_FACTORY_INVALID = 'ERROR_FACTORY_INVALID'

/**
 * Registers how to rebuild an error class from its serialized form. Packages
 * that define errors which cross the journal register them once, by the
 * error's `name`. A later registration under the same name replaces the
 * earlier one.
 *
 * @example
 * ```ts
 * registerErrorFactory('WorkflowGroupFailureError', (serialized) => WorkflowGroupFailureError.fromSerialized(serialized))
 * ```
 */
export function registerErrorFactory(name: string, factory: ErrorFactory): void {
  if (typeof name !== 'string' || name.length === 0) {
    throw new LocusError('registerErrorFactory needs the error name as a non-empty string.', {
      code: ERROR_FACTORY_INVALID,
    })
  }
  if (typeof factory !== 'function') {
    throw new LocusError(`registerErrorFactory("${name}") needs a function that builds the error.`, {
      code: ERROR_FACTORY_INVALID,
    })
  }
  registry().set(name, factory)
}

/** Fields every error has, or that are carried in their own slot rather than in `data`. */
const RESERVED_FIELDS = new Set(['name', 'message', 'code', 'cause', 'stack'])
/** How deep a chain of causes is followed before the rest is summarised. */
const MAX_CAUSE_DEPTH = 8

/**
 * Serializes anything thrown into a {@link SerializedError}. Locus errors keep
 * their code; other errors keep a string `code` they carry (such as Node's
 * `ENOENT`) or get `UNKNOWN_ERROR`. The cause chain is followed (cycles and
 * very deep chains are cut), and other own fields that are JSON-safe go into
 * `data`. It never throws.
 *
 * @example
 * ```ts
 * serializeError(new Error('boom'))
 * // => { name: 'Error', code: 'UNKNOWN_ERROR', message: 'boom', stack: '...' }
 * ```
 */
export function serializeError(thrown: unknown): SerializedError {
  return serializeAt(thrown, new Set(), 0)
}

function serializeAt(thrown: unknown, seen: Set<unknown>, depth: number): SerializedError {
  if (!(thrown instanceof Error) && !LocusError.isInstance(thrown)) {
    const serialized: SerializedError = { name: 'NonError', code: UNKNOWN_ERROR_CODE, message: describeThrown(thrown) }
    const cause = toJson(thrown)
    if (cause !== undefined) serialized.cause = cause
    return serialized
  }
  seen.add(thrown)
  const error = thrown as Error & { code?: unknown }
  const serialized: SerializedError = {
    name: typeof error.name === 'string' && error.name.length > 0 ? error.name : 'Error',
    code: typeof error.code === 'string' && error.code.length > 0 ? error.code : UNKNOWN_ERROR_CODE,
    message: typeof error.message === 'string' ? error.message : String(error.message),
  }
  const cause = readField(error, 'cause')
  if (cause !== undefined) {
    if (seen.has(cause)) serialized.cause = '[circular cause]'
    else if (depth >= MAX_CAUSE_DEPTH) serialized.cause = '[cause chain truncated]'
    else if (cause instanceof Error || LocusError.isInstance(cause)) serialized.cause = serializeAt(cause, seen, depth + 1)
    else serialized.cause = toJson(cause) ?? describeThrown(cause)
  }
  const data = collectData(error, seen, depth)
  if (data !== undefined) serialized.data = data
  if (typeof error.stack === 'string') serialized.stack = error.stack
  return serialized
}

function collectData(error: Error, seen: Set<unknown>, depth: number): { [key: string]: JsonValue } | undefined {
  let data: { [key: string]: JsonValue } | undefined
  let keys: string[]
  try {
    keys = Object.keys(error)
  } catch {
    return undefined
  }
  for (const key of keys) {
    if (RESERVED_FIELDS.has(key)) continue
    const value = readField(error, key)
    let json: JsonValue | undefined
    if (value instanceof Error && !seen.has(value) && depth < MAX_CAUSE_DEPTH) {
      json = serializeAt(value, seen, depth + 1) as unknown as JsonValue
    } else {
      json = toJson(value)
    }
    if (json === undefined) continue
    data ??= {}
    data[key] = json
  }
  // AggregateError keeps its members in a non-enumerable `errors` field.
  if (error instanceof AggregateError && Array.isArray(error.errors) && data?.errors === undefined) {
    data ??= {}
    data.errors = error.errors.map((member) =>
      depth < MAX_CAUSE_DEPTH ? (serializeAt(member, seen, depth + 1) as unknown as JsonValue) : '[truncated]',
    )
  }
  return data
}

function readField(source: object, key: string): unknown {
  try {
    return (source as Record<string, unknown>)[key]
  } catch {
    return undefined
  }
}

/** The JSON form of a value, or `undefined` when it has none (BigInt, cycles, throwing getters). */
function toJson(value: unknown): JsonValue | undefined {
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return undefined
  try {
    return prepareWorkflowResult(value)
  } catch {
    return undefined
  }
}

function describeThrown(value: unknown): string {
  if (typeof value === 'string') return value
  if (value === undefined) return 'undefined was thrown'
  if (value === null) return 'null was thrown'
  const json = toJson(value)
  if (json !== undefined) return `a non-error value was thrown: ${JSON.stringify(json)}`
  return `a non-error value of type ${typeof value} was thrown`
}

function isSerializedError(value: unknown): value is SerializedError {
  return SerializedErrorSchema.safeParse(value).success
}

function rebuildCause(cause: SerializedError['cause']): unknown {
  if (cause === undefined) return undefined
  return isSerializedError(cause) ? deserializeError(cause) : cause
}

/**
 * Rebuilds an error from its serialized form. A name registered with
 * {@link registerErrorFactory} (or a Locus error this package knows) is
 * rebuilt by its factory; anything else becomes a `LocusError` with the same
 * `name`, `code`, `message`, the `data` fields copied onto it and the cause
 * rebuilt. A factory that throws falls back to the generic rebuild, keeping
 * the factory's error as the result's `factoryError` field.
 *
 * @example
 * ```ts
 * const error = deserializeError(line.error)
 * if (hasLocusErrorCode(error, 'WORKFLOW_GROUP_FAILURE')) { ... }
 * ```
 */
export function deserializeError(serialized: SerializedError): Error {
  const factory = registry().get(serialized.name) ?? BUILT_IN_FACTORIES.get(serialized.name)
  let factoryFailure: unknown
  if (factory !== undefined) {
    try {
      return factory(serialized)
    } catch (error) {
      factoryFailure = error
    }
  }
  const rebuilt = new LocusError(serialized.message, { code: serialized.code, cause: rebuildCause(serialized.cause) })
  rebuilt.name = serialized.name
  const target = rebuilt as unknown as Record<string, unknown>
  for (const [key, value] of Object.entries(serialized.data ?? {})) {
    if (!(key in rebuilt)) target[key] = value
  }
  if (factoryFailure !== undefined) target.factoryError = factoryFailure
  if (serialized.stack !== undefined) rebuilt.stack = serialized.stack
  return rebuilt
}
