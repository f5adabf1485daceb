import { LocusError, hasLocusErrorCode } from '@locus/outcome'
import type { z } from 'zod'
import { ActionSchema, CallSchema, TriggerSchema, WorkerResponseSchema } from './wire-schemas.js'
import type { Action, Call, Trigger, WorkerResponse } from './wire-schemas.js'

export const PROTOCOL_MESSAGE_INVALID = 'PROTOCOL_MESSAGE_INVALID'

/** One thing wrong with a message: where (a dotted path such as `actions.0.retryable`) and what. */
export interface ProtocolIssue {
  readonly path: string
  readonly message: string
}

/**
 * A message on the wire that is not what the protocol says: an unknown type,
 * a missing or mistyped field, or a field the protocol does not have. The
 * message names every offending field; nothing recorded is touched by a
 * refused message.
 */
export class ProtocolError extends LocusError {
  declare readonly code: typeof PROTOCOL_MESSAGE_INVALID
  /** What kind of message was expected: `action`, `trigger`, `worker response` or `call`. */
  readonly expected: string
  readonly issues: readonly ProtocolIssue[]

  constructor(expected: string, issues: readonly ProtocolIssue[]) {
    const listed = issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')
    super(`Invalid ${expected}: ${listed}. See docs/protocol.md for the fields each message has.`, { code: PROTOCOL_MESSAGE_INVALID })
    this.name = 'ProtocolError'
    this.expected = expected
    this.issues = issues
  }

  static override isInstance(value: unknown): value is ProtocolError {
    return hasLocusErrorCode(value, PROTOCOL_MESSAGE_INVALID)
  }
}

function issuesOf(error: z.ZodError, value: unknown): ProtocolIssue[] {
  return error.issues.flatMap((issue): ProtocolIssue[] => {
    const prefix = issue.path.map(String)
    const path = prefix.join('.') || '(message)'
    if (issue.code === 'unrecognized_keys') {
      const owner = typeOf(valueAt(value, issue.path)) ?? 'this message'
      return issue.keys.map((key) => ({ path: [...prefix, key].join('.'), message: `is not a field of ${owner}; remove it` }))
    }
    const options = (issue as { options?: unknown }).options
    if (issue.code === 'invalid_union' && Array.isArray(options)) {
      const received = valueAt(value, issue.path)
      return [{ path, message: `${received === undefined ? 'missing' : JSON.stringify(received)} is not one of ${options.map(String).join(', ')}` }]
    }
    if (issue.code === 'invalid_union') {
      return [{ path, message: 'must be JSON: a string, a finite number, a boolean, null, an array or an object of those' }]
    }
    return [{ path, message: issue.message }]
  })
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined
    current = (current as Record<PropertyKey, unknown>)[key]
  }
  return current
}

function typeOf(value: unknown): string | undefined {
  const type = typeof value === 'object' && value !== null ? (value as { type?: unknown }).type : undefined
  return typeof type === 'string' ? type : undefined
}

function parseWith<T>(schema: z.ZodType<T>, expected: string, value: unknown): T {
  const parsed = schema.safeParse(value)
  // The schemas only check (no defaults, no transforms), so the message itself is returned: zod's copy
  // would drop an own "__proto__" key that JSON.parse gave it, and the wire must carry JSON unchanged.
  if (parsed.success) return value as T
  throw new ProtocolError(expected, issuesOf(parsed.error, value))
}

/** Parses one action; throws {@link ProtocolError} naming each bad field. */
export function parseAction(value: unknown): Action {
  return parseWith(ActionSchema, 'action', value)
}

/** Parses one trigger; throws {@link ProtocolError} naming each bad field. */
export function parseTrigger(value: unknown): Trigger {
  return parseWith(TriggerSchema, 'trigger', value)
}

/** Parses what a worker returned for a trigger (`{ actions: [...] }`). */
export function parseWorkerResponse(value: unknown): WorkerResponse {
  return parseWith(WorkerResponseSchema, 'worker response', value)
}

/** Parses a call as the engine reports it. */
export function parseCall(value: unknown): Call {
  return parseWith(CallSchema, 'call', value)
}
