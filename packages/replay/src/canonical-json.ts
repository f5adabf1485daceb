import canonicalizeModule from 'canonicalize'

type Serialize = (input: unknown) => string | undefined

// canonicalize is CommonJS (`module.exports = serialize`) while its typings
// declare an ES default export; under NodeNext the two disagree, so take the
// function from wherever this loader put it.
const imported: unknown = canonicalizeModule
const serialize: Serialize =
  typeof imported === 'function' ? (imported as Serialize) : (imported as { default: Serialize }).default

/**
 * The RFC 8785 (JSON Canonicalization Scheme) text of a JSON value: object
 * members sorted by UTF-16 code units, no whitespace, ECMAScript number form.
 * Equal data gives equal text whatever the property order.
 *
 * @example
 * ```ts
 * canonicalJson({ b: 1, a: [true, null] }) // => '{"a":[true,null],"b":1}'
 * ```
 */
export function canonicalJson(value: unknown): string {
  return serialize(value) ?? 'null'
}
