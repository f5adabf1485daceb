/**
 * How deep JSON may nest where it crosses a Locus boundary: a workflow's
 * input, its result, a tool's arguments and answer. Counted in containers:
 * `1` and `{}` are depth 0 and 1, `{"a":[1]}` is depth 2. Deeper values are
 * refused where they enter (400 from the server, exit 2 from the CLI) and
 * fail a run's result as `too-deep`, so nothing downstream (hashing,
 * canonical JSON, detaching) recurses far enough to overflow the stack.
 */
export const MAX_JSON_DEPTH = 512

/**
 * The nesting depth of a JSON-like value, counting arrays and plain objects,
 * walked without recursion; it stops counting past `limit`, so a value of any
 * depth is measured in bounded time and stack.
 *
 * @example
 * ```ts
 * jsonDepth({ a: [1, { b: 2 }] }) // 3
 * ```
 */
export function jsonDepth(value: unknown, limit = MAX_JSON_DEPTH): number {
  let deepest = 0
  const pending: { readonly value: unknown; readonly depth: number }[] = [{ value, depth: 0 }]
  while (pending.length > 0) {
    const next = pending.pop()
    if (next === undefined) break
    // No visited set: a cycle only goes deeper, so it ends at the limit like any deep value.
    if (typeof next.value !== 'object' || next.value === null) continue
    const depth = next.depth + 1
    if (depth > deepest) deepest = depth
    if (deepest > limit) return deepest
    const children = Array.isArray(next.value) ? (next.value as unknown[]) : Object.values(next.value)
    for (const child of children) if (typeof child === 'object' && child !== null) pending.push({ value: child, depth })
  }
  return deepest
}

/**
 * Says what is wrong with a value that nests deeper than {@link MAX_JSON_DEPTH},
 * naming where it came from; `undefined` when it fits.
 *
 * @example
 * ```ts
 * jsonDepthProblem(JSON.parse('['.repeat(600) + ']'.repeat(600)), 'input')
 * // 'input nests more than 512 levels deep (the limit for JSON in Locus); flatten it'
 * ```
 */
export function jsonDepthProblem(value: unknown, where: string): string | undefined {
  return jsonDepth(value) > MAX_JSON_DEPTH ? `${where} nests more than ${MAX_JSON_DEPTH} levels deep (the limit for JSON in Locus); flatten it` : undefined
}
