import type { RunStore } from '@locus/store'

/**
 * What leaves the server about its insides: nothing. Error messages sent to
 * clients lose file system paths and command-line advice (an HTTP client
 * cannot run `locus ls`), and journal lines, results and artifacts served
 * over HTTP lose every `stack` (also inside `cause`); the stack stays in the
 * run's files for the operator.
 */

/** What stands in for a file system path in a message that leaves. */
export const PATH_PLACEHOLDER = '<path>'

/** The API's own paths, which messages name on purpose (`POST /v1/runs/{id}/resume continues it`). */
const API_PATH = /^\/(?:v\d+|mcp|runs|openapi\.json|healthz|readyz|login|logout|inspector\.js)(?:[/?#]|$)/
/** `file:` URLs, Windows drive paths, `~/` paths. */
const OTHER_PATHS = /file:\/\/[^\s"'`<>)\]]+|(?<![\w])[A-Za-z]:\\[^\s"'`<>)\]]*|(?<![\w/])~\/[^\s"'`<>)\]]*/g
/** A `/` that starts a token (not inside a URL, a fraction or `a/b`), and the token after it. */
const SLASH_TOKEN = /(?<![\w.:/~\\-])\/[\w.@%+~=-]+(?:\/[\w.@%+~=-]*)*/g

/** Replaces absolute file system paths in `text` with {@link PATH_PLACEHOLDER}; the API's own route paths stay. */
export function scrubPaths(text: string): string {
  return text
    .replace(OTHER_PATHS, (token) => PATH_PLACEHOLDER + trailOf(token))
    .replace(SLASH_TOKEN, (token) => {
      const trail = trailOf(token)
      const bare = token.slice(0, token.length - trail.length)
      if (bare.length <= 1 || API_PATH.test(bare)) return token
      return PATH_PLACEHOLDER + trail
    })
}

/** A trailing sentence mark, which is not part of the path before it. */
function trailOf(token: string): string {
  return /[.:!?]+$/.exec(token)?.[0] ?? ''
}

/** Advice that only a shell user can follow: a `locus` command, a `--flag`, `npm run`. */
const CLI_ADVICE = /`locus\b|\blocus (?:ls|run|resume|replay|show|journal|serve|resolve|init|report|mcp|worker|check-deploy|db)\b|(?<![\w-])--[a-z][\w-]*|\bnpm run\b|\bnpx\b/

/** True when `text` tells someone to run a command line. */
export function hasCliAdvice(text: string): boolean {
  return CLI_ADVICE.test(text)
}

/**
 * A message as a client may see it: absolute paths replaced, and each clause
 * (split at `;` and at sentence ends) that gives command-line advice left
 * out. A message that was nothing but advice keeps a neutral sentence.
 */
export function clientMessage(message: string): string {
  const scrubbed = scrubPaths(message)
  if (!hasCliAdvice(scrubbed)) return scrubbed
  const clauses = scrubbed.split(/(?<=[;.])\s+/)
  const kept = clauses.filter((clause) => !hasCliAdvice(clause))
  if (kept.length === 0) return 'The request could not be completed; the details are in the server log.'
  const text = kept.join(' ').trim()
  // A message cut after a `;` ends like a sentence.
  return text.endsWith(';') || text.endsWith(',') ? `${text.slice(0, -1)}.` : text
}

/** Keys whose string values are messages about a failure, scrubbed wherever they appear in a served line. */
const MESSAGE_KEYS = new Set(['message', 'error', 'reason', 'source'])
/** Keys whose string values are file system locations (`transcriptDir`, `journalPath`, `cwd`): absolute ones are scrubbed. */
const PATH_KEY = /(?:Dir|Path|File|^cwd|^path|^dir)$/

/**
 * A JSON value (a journal line, a result, an artifact) as it leaves the
 * server: every `stack` property dropped, at any depth (so `cause` chains too),
 * and the strings under `message`, `error`, `reason` and `source` passed
 * through {@link clientMessage}, and those under keys that name a location
 * (`...Dir`, `...Path`, `...File`, `cwd`) through {@link scrubPaths}. Everything else, the workflow's own data
 * (inputs, arguments, results), is untouched. The input is not modified.
 */
export function clientValue<T>(value: T): T {
  return redactValue(value, undefined, 0) as T
}

const MAX_DEPTH = 512

/** What a key's string values are, decided once per key name: a journal has few names and many lines. */
const keyKinds = new Map<string, 'message' | 'path' | 'plain'>()
function kindOfKey(key: string): 'message' | 'path' | 'plain' {
  let kind = keyKinds.get(key)
  if (kind === undefined) {
    kind = MESSAGE_KEYS.has(key) ? 'message' : PATH_KEY.test(key) ? 'path' : 'plain'
    // Keys come from stored data: an unbounded set of names is not kept.
    if (keyKinds.size < 10_000) keyKinds.set(key, kind)
  }
  return kind
}

function redactValue(value: unknown, key: string | undefined, depth: number): unknown {
  if (typeof value === 'string') {
    if (key === undefined) return value
    const kind = kindOfKey(key)
    return kind === 'message' ? clientMessage(value) : kind === 'path' ? scrubPaths(value) : value
  }
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return value
  // Copied only from the first change on: most served values (a journal line of a healthy run) change nowhere.
  if (Array.isArray(value)) {
    let next: unknown[] | undefined
    for (let index = 0; index < value.length; index += 1) {
      const item: unknown = value[index]
      const redacted = redactValue(item, key === 'issues' ? 'message' : undefined, depth + 1)
      if (next === undefined && redacted !== item) next = value.slice(0, index)
      next?.push(redacted)
    }
    return next ?? value
  }
  const record = value as Record<string, unknown>
  const names = Object.keys(record)
  let next: Record<string, unknown> | undefined
  for (let index = 0; index < names.length; index += 1) {
    const name = names[index] as string
    const item = record[name]
    const dropped = name === 'stack' && typeof item === 'string'
    const redacted = dropped ? undefined : redactValue(item, name, depth + 1)
    if (next === undefined && (dropped || redacted !== item)) {
      next = {}
      for (const earlier of names.slice(0, index)) next[earlier] = record[earlier]
    }
    if (next !== undefined && !dropped) next[name] = redacted
  }
  return next ?? value
}

/**
 * Each served line, by the line object: a live feed hands every subscriber of
 * a run the same object, so a thousand streams redact a line once (and share
 * the one encoded frame made of the result).
 */
const servedLines = new WeakMap<object, unknown>()

/** {@link clientValue} of a value, made once per value object. */
export function servedOnce<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return clientValue(value)
  if (servedLines.has(value)) return servedLines.get(value) as T
  const served = clientValue(value)
  servedLines.set(value, served)
  return served
}

/** An async iterator whose values pass through {@link clientValue} (once per value object, however many iterate it). */
export function clientLines<T>(lines: AsyncIterator<T>, serve: (value: T) => T = servedOnce): AsyncIterator<T> {
  // Plain promise chaining, not an async function or generator: this runs once per line of every journal read.
  const served = (next: IteratorResult<T>): IteratorResult<T> => (next.done === true ? next : { done: false, value: serve(next.value) })
  return {
    next: () => lines.next().then(served),
    return: async (value?: unknown) => (await lines.return?.(value)) ?? { done: true, value: undefined },
  }
}

/** A JSON text (an artifact) as it leaves: {@link clientValue} of it, the text unchanged when nothing had to go. */
export function clientJsonText(text: string): string {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return scrubPaths(text)
  }
  const redacted = clientValue(parsed)
  return redacted === parsed ? text : JSON.stringify(redacted, null, 2)
}

/** Lines through {@link clientLines}: each redacted as it is read, with no async generator in between. */
function mapLines<T>(lines: AsyncIterable<T>): AsyncIterable<T> {
  // Lines read from the store are fresh objects, each served once: no memo.
  return { [Symbol.asyncIterator]: () => clientLines(lines[Symbol.asyncIterator](), clientValue) }
}

/**
 * The store as pages read it: lines and artifacts come out through
 * {@link clientValue}, so the inspector renders no stack and no path.
 * Everything else is the store itself.
 */
export function clientStore(store: RunStore): RunStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'readLines') return (...args: Parameters<RunStore['readLines']>) => mapLines(target.readLines(...args))
      if (property === 'readArtifact') {
        return async (...args: Parameters<RunStore['readArtifact']>) => {
          const text = await target.readArtifact(...args)
          return text === undefined ? undefined : clientJsonText(text)
        }
      }
      const value: unknown = Reflect.get(target, property, receiver)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
}
