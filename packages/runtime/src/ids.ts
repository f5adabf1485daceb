/**
 * Turns a group-tree position such as `2[3].1` into a token safe for file
 * names, `2.3.1`. The mapping is one-to-one: below the root every child sits in
 * a slot, so a bracket pair always separates two numbers.
 */
export function positionToken(position: string): string {
  return position.replaceAll('[', '.').replaceAll(']', '')
}

/** A fresh run id: sortable by start time, unique by a random suffix, safe as a directory name. */
export function createRunId(now: Date, random: () => number = Math.random): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)
  const suffix = Math.floor(random() * 36 ** 6).toString(36).padStart(6, '0')
  return `${stamp}-${suffix}`
}
