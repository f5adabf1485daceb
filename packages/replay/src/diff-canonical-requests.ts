import { CANONICAL_REQUEST_FIELDS, type CanonicalRequest, type CanonicalRequestField } from './canonical-request.js'
import { canonicalJson } from './canonical-json.js'

/**
 * The identity fields whose values differ between two canonical requests, in
 * {@link CANONICAL_REQUEST_FIELDS} order. A field present in one and absent
 * in the other differs; values are compared by canonical JSON, so property
 * order inside `budgets` does not count.
 *
 * @param fields - compare only these fields (for a recording that kept part of the request).
 * @default fields CANONICAL_REQUEST_FIELDS
 *
 * @example
 * ```ts
 * diffCanonicalRequests({ prompt: 'a', timeoutMs: 5 }, { prompt: 'b' }) // => ['prompt', 'timeoutMs']
 * ```
 */
export function diffCanonicalRequests(
  left: CanonicalRequest,
  right: CanonicalRequest,
  fields: readonly CanonicalRequestField[] = CANONICAL_REQUEST_FIELDS,
): CanonicalRequestField[] {
  return CANONICAL_REQUEST_FIELDS.filter((field) => fields.includes(field) && !sameValue(left[field], right[field]))
}

function sameValue(left: unknown, right: unknown): boolean {
  if (left === undefined || right === undefined) return left === right
  if (typeof left !== 'object' && typeof right !== 'object') return left === right
  return canonicalJson(left) === canonicalJson(right)
}
