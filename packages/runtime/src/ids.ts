import { randomBytes } from 'node:crypto'

/**
 * Turns a group-tree position such as `2[3].1` into a token safe for file
 * names, `2.3.1`. The mapping is one-to-one: below the root every child sits in
 * a slot, so a bracket pair always separates two numbers.
 */
export function positionToken(position: string): string {
  return position.replaceAll('[', '.').replaceAll(']', '')
}

/** Crockford's base-32 alphabet, lower case: no `i`, `l`, `o` or `u` to misread. */
const BASE32 = '0123456789abcdefghjkmnpqrstvwxyz'
/** Random characters after the time stamp: 12 × 5 = 60 bits. */
const RUN_ID_RANDOM_CHARS = 12

/**
 * A fresh run id, `yyyymmdd-hhmmss-` and 12 base-32 characters (60 bits) from
 * the operating system's cryptographic random source: sortable by start time,
 * safe as a directory name, and unlikely to clash even at millions of runs a
 * second. A clash is still possible, so the run directory is created
 * exclusively and a clashing id is replaced (see `claimRunDirectory`).
 */
export function createRunId(now: Date, random: (size: number) => Uint8Array = randomBytes): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)
  const bytes = random(RUN_ID_RANDOM_CHARS)
  let suffix = ''
  // 256 is a multiple of 32, so masking keeps every character equally likely.
  for (let index = 0; index < RUN_ID_RANDOM_CHARS; index += 1) suffix += BASE32.charAt((bytes[index] ?? 0) & 31)
  return `${stamp}-${suffix}`
}
