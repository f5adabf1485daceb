/**
 * Columns of numbers for the calls of a recording read from a journal: per
 * call a handful of typed-array slots and its request key as 32 raw bytes,
 * so a recording of 100,000 calls costs about 12 MB instead of an object,
 * several strings and a map entry per call.
 */

/** A request key as `requestKey`, `toolRequestKey` and `childRequestKey` make it. */
const SHA256_KEY = /^sha256:[0-9a-f]{64}$/
const KEY_PREFIX = 'sha256:'
const DIGEST_BYTES = 32

/** How a call's final attempt ended, as far as a scan could tell without keeping its line. */
export const Ending = {
  /** No terminal line for the final attempt. */
  none: 0,
  /** The final attempt threw: an `error` line, so its envelope is in a file. */
  threw: 1,
  /** The terminal line holds the whole result. */
  whole: 2,
  /** A completed `agent_end` without its answer (an older journal): the answer is in the envelope file. */
  answerElsewhere: 3,
  /** A completed `tool_end` or `child_end` without a result. */
  noResult: 4,
} as const
export type Ending = (typeof Ending)[keyof typeof Ending]

export const CALL_KINDS = ['agent', 'tool', 'child'] as const
export type CallKind = (typeof CALL_KINDS)[number]

/** Request keys by row: 32 bytes each when they are sha256 keys, a side map otherwise (or when absent). */
class KeyColumn {
  #digests = Buffer.alloc(0)
  /** 0: no key; 1: a digest in `#digests`; 2: in `#others`. */
  #state = new Uint8Array(0)
  readonly #others = new Map<number, string>()

  grow(capacity: number): void {
    const digests = Buffer.alloc(capacity * DIGEST_BYTES)
    this.#digests.copy(digests)
    this.#digests = digests
    const state = new Uint8Array(capacity)
    state.set(this.#state)
    this.#state = state
  }

  set(row: number, key: string | undefined): void {
    this.#others.delete(row)
    if (key === undefined) {
      this.#state[row] = 0
    } else if (SHA256_KEY.test(key)) {
      this.#digests.write(key.slice(KEY_PREFIX.length), row * DIGEST_BYTES, DIGEST_BYTES, 'hex')
      this.#state[row] = 1
    } else {
      this.#others.set(row, key)
      this.#state[row] = 2
    }
  }

  /** Whether the row has a key, without building its text. */
  has(row: number): boolean {
    return this.#state[row] !== 0
  }

  get(row: number): string | undefined {
    const state = this.#state[row]
    if (state === 1) return KEY_PREFIX + this.#digests.toString('hex', row * DIGEST_BYTES, (row + 1) * DIGEST_BYTES)
    return state === 2 ? this.#others.get(row) : undefined
  }
}

/** The calls of one execution's journal, one row each. */
export class CallTable {
  #capacity = 0
  size = 0
  kind = new Uint8Array(0)
  attempt = new Uint32Array(0)
  ending = new Uint8Array(0)
  startAt = new Float64Array(0)
  startLength = new Uint32Array(0)
  endAt = new Float64Array(0)
  endLength = new Uint32Array(0)
  readonly ordinal: string[] = []
  /** The key of the final attempt's start line. */
  readonly finalKey = new KeyColumn()
  /** The first key any attempt carried, when it differs from the final one (rare: only a retry can change it). */
  readonly firstKeys = new Map<number, string>()

  /** Adds a row and returns its number. */
  add(kind: CallKind, ordinal: string): number {
    if (this.size === this.#capacity) this.#grow(Math.max(64, this.#capacity * 2))
    const row = this.size
    this.size += 1
    this.kind[row] = CALL_KINDS.indexOf(kind)
    this.ordinal.push(ordinal)
    return row
  }

  kindOf(row: number): CallKind {
    return CALL_KINDS[this.kind[row] ?? 0] ?? 'agent'
  }

  firstKeyOf(row: number): string | undefined {
    return this.firstKeys.get(row) ?? this.finalKey.get(row)
  }

  #grow(capacity: number): void {
    const widen = <T extends Uint8Array | Uint32Array | Float64Array>(column: T, make: (length: number) => T): T => {
      const wider = make(capacity)
      wider.set(column)
      return wider
    }
    this.kind = widen(this.kind, (length) => new Uint8Array(length))
    this.attempt = widen(this.attempt, (length) => new Uint32Array(length))
    this.ending = widen(this.ending, (length) => new Uint8Array(length))
    this.startAt = widen(this.startAt, (length) => new Float64Array(length))
    this.startLength = widen(this.startLength, (length) => new Uint32Array(length))
    this.endAt = widen(this.endAt, (length) => new Float64Array(length))
    this.endLength = widen(this.endLength, (length) => new Uint32Array(length))
    this.finalKey.grow(capacity)
    this.#capacity = capacity
  }
}
