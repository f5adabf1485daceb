import { hash } from 'node:crypto'
import { type AgentCallRequest, type CanonicalRequest, canonicalRequest } from './canonical-request.js'
import { canonicalJson } from './canonical-json.js'

/** Every request key starts with this; the rest is the lowercase hex SHA-256 of the canonical JSON. */
export const REQUEST_KEY_PREFIX = 'sha256:'

/**
 * The stable key of a call's canonical request: `sha256:` followed by the
 * hex SHA-256 of its RFC 8785 canonical JSON. Property order never matters,
 * and neither does any field outside the identity (`attempts`, `label`,
 * `phase`...): adding `attempts: 3` to a call keeps its key. Changing the
 * prompt, agent, choice declaration, `timeoutMs`, per-call budgets or return
 * contract version changes it.
 *
 * @throws {CanonicalRequestError} when an identity field is invalid.
 *
 * @example
 * ```ts
 * requestKey({ agent: 'analyst', prompt: 'Summarise' }) ===
 *   requestKey({ prompt: 'Summarise', agent: 'analyst', attempts: 3 }) // => true
 * ```
 */
export function requestKey(call: AgentCallRequest): string {
  return keyOfCanonical(canonicalRequest(call))
}

/** @internal The key of a request that is already canonical. */
export function keyOfCanonical(request: CanonicalRequest): string {
  return REQUEST_KEY_PREFIX + hash('sha256', canonicalRequestJson(request), 'hex')
}

/**
 * @internal The RFC 8785 text of a canonical request, written member by
 * member: the identity field names are fixed, so their sorted order is known
 * and only the values need serializing. Scalars go through `JSON.stringify`,
 * which is the RFC's own definition for strings and numbers; nested values
 * through `canonicalJson`. Equal to `canonicalJson(request)` (a property test
 * holds it to that), and cheaper on the per-call path.
 */
export function canonicalRequestJson(request: CanonicalRequest): string {
  // Sorted by UTF-16 code units: agent < budgets < choice < choiceFallback < prompt < returnContractVersion < timeoutMs.
  let text = '{'
  if (request.agent !== undefined) text += `"agent":${JSON.stringify(request.agent)},`
  if (request.budgets !== undefined) text += `"budgets":${canonicalJson(request.budgets)},`
  if (request.choice !== undefined) text += `"choice":${canonicalJson(request.choice)},`
  if (request.choiceFallback !== undefined) text += `"choiceFallback":${JSON.stringify(request.choiceFallback)},`
  text += `"prompt":${JSON.stringify(request.prompt)}`
  if (request.returnContractVersion !== undefined) text += `,"returnContractVersion":${JSON.stringify(request.returnContractVersion)}`
  if (request.timeoutMs !== undefined) text += `,"timeoutMs":${JSON.stringify(request.timeoutMs)}`
  return `${text}}`
}
