import { hash } from 'node:crypto'
import type { JsonValue } from '@locus/outcome'
import { canonicalJson } from './canonical-json.js'
import { CanonicalRequestError } from './replay-errors.js'
import { REQUEST_KEY_PREFIX } from './request-key.js'

/**
 * The identity fields of a `tool()` call the workflow script made: which tool,
 * with which arguments after validation and JSON detachment. The retry policy,
 * label and timing never join it, so tightening a policy keeps a recording.
 */
export const TOOL_REQUEST_FIELDS = ['tool', 'args'] as const
export type ToolRequestField = (typeof TOOL_REQUEST_FIELDS)[number]

/** One tool call as replay compares it. `args` must already be detached JSON. */
export interface ToolCallRequest {
  readonly tool: string
  readonly args: JsonValue
}

/**
 * The stable key of a tool call: `sha256:` and the hex SHA-256 of the RFC 8785
 * JSON of `{ args, tool }`. It cannot equal an agent call's key, whose
 * canonical request always holds a `prompt`.
 *
 * @throws {CanonicalRequestError} when `tool` is not a non-empty string.
 *
 * @example
 * ```ts
 * toolRequestKey({ tool: 'charge', args: { amount: 42 } }) === toolRequestKey({ args: { amount: 42 }, tool: 'charge' }) // => true
 * ```
 */
export function toolRequestKey(request: ToolCallRequest): string {
  if (typeof request !== 'object' || (request as unknown) === null) {
    throw new CanonicalRequestError([{ field: 'request', message: 'a tool request is { tool, args }' }])
  }
  if (typeof request.tool !== 'string' || request.tool === '') {
    throw new CanonicalRequestError([{ field: 'tool', message: 'tool must be the non-empty name of a declared tool' }])
  }
  return REQUEST_KEY_PREFIX + hash('sha256', canonicalJson({ args: request.args, tool: request.tool }), 'hex')
}

/** The identity fields in which two tool requests differ, in {@link TOOL_REQUEST_FIELDS} order. */
export function diffToolRequests(recorded: ToolCallRequest, actual: ToolCallRequest): ToolRequestField[] {
  const fields: ToolRequestField[] = []
  if (recorded.tool !== actual.tool) fields.push('tool')
  if (canonicalJson(recorded.args) !== canonicalJson(actual.args)) fields.push('args')
  return fields
}
