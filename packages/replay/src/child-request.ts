import { hash } from 'node:crypto'
import type { JsonValue } from '@locus/outcome'
import { canonicalJson } from './canonical-json.js'
import { CanonicalRequestError } from './replay-errors.js'
import { REQUEST_KEY_PREFIX } from './request-key.js'

/**
 * The identity fields of a child workflow spawn (seed `sub_agent.spawn`):
 * which saved workflow, with which input after JSON detachment. The retry
 * policy and label never join it, so tightening a policy keeps a recording.
 */
export const CHILD_REQUEST_FIELDS = ['workflow', 'input'] as const
export type ChildRequestField = (typeof CHILD_REQUEST_FIELDS)[number]

/** One spawn as replay compares it. `input` must already be detached JSON. */
export interface ChildCallRequest {
  readonly workflow: string
  readonly input: JsonValue
}

/**
 * The stable key of a spawn: `sha256:` and the hex SHA-256 of the RFC 8785
 * JSON of `{ input, workflow }`. It cannot equal a tool call's key (whose
 * JSON holds `args` and `tool`) nor an agent call's (which holds `prompt`).
 *
 * @throws {CanonicalRequestError} when `workflow` is not a non-empty string.
 *
 * @example
 * ```ts
 * childRequestKey({ workflow: 'enrich', input: { id: 'T-1' } })
 * ```
 */
export function childRequestKey(request: ChildCallRequest): string {
  if (typeof request !== 'object' || (request as unknown) === null) {
    throw new CanonicalRequestError([{ field: 'request', message: 'a spawn request is { workflow, input }' }])
  }
  if (typeof request.workflow !== 'string' || request.workflow === '') {
    throw new CanonicalRequestError([{ field: 'workflow', message: 'workflow must be the non-empty name of a saved workflow' }])
  }
  return REQUEST_KEY_PREFIX + hash('sha256', canonicalJson({ input: request.input, workflow: request.workflow }), 'hex')
}

/** The identity fields in which two spawn requests differ, in {@link CHILD_REQUEST_FIELDS} order. */
export function diffChildRequests(recorded: ChildCallRequest, actual: ChildCallRequest): ChildRequestField[] {
  const fields: ChildRequestField[] = []
  if (recorded.workflow !== actual.workflow) fields.push('workflow')
  if (canonicalJson(recorded.input) !== canonicalJson(actual.input)) fields.push('input')
  return fields
}
