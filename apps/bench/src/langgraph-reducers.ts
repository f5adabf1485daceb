/**
 * A LangGraph channel reducer that appends the update to the channel's array
 * in place: the cheapest correct reducer, so that LangGraph's rows measure
 * the graph and not an O(n²) `concat`.
 */
export function appendInPlace<T>(left: T[], right: T[]): T[] {
  for (const item of right) left.push(item)
  return left
}
