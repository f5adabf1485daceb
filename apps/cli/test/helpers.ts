import { type ChildProcess, spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

/** The repository root, where the examples live. */
export const repoRoot = resolve(import.meta.dirname, '..', '..', '..')
/** The built binary every end-to-end test runs. */
export const cliPath = join(repoRoot, 'apps', 'cli', 'dist', 'cli.js')
/** The examples directory. */
export const examplesDir = join(repoRoot, 'docs', 'examples')

/** What a finished `locus` process left. */
export interface LocusResult {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** A fresh temporary directory. */
export function tempDir(prefix = 'locus-cli-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix))
}

/** The environment a test run gets: no colours, no model or database settings leaking in from the machine. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const leaking = new Set(['LOCUS_MODEL_BASE_URL', 'LOCUS_MODEL', 'LOCUS_API_KEY', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GOOGLE_GENERATIVE_AI_API_KEY', 'LOCUS_DATABASE_URL', 'LOCUS_RUNS_DIR'])
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !leaking.has(key)))
  return { ...env, NO_COLOR: '1', ...extra }
}

/** Starts `node apps/cli/dist/cli.js ...args`. */
export function startLocus(args: readonly string[], options: { cwd?: string; env?: Record<string, string> } = {}): ChildProcess {
  return spawn(process.execPath, [cliPath, ...args], { cwd: options.cwd ?? repoRoot, env: cleanEnv(options.env), stdio: ['ignore', 'pipe', 'pipe'] })
}

/** Collects a started process's output until it exits. */
export function settle(child: ChildProcess): Promise<LocusResult> {
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  return new Promise((resolveResult, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => {
      resolveResult({ code, signal, stdout, stderr })
    })
  })
}

/** Runs `locus` to its end. */
export function runLocus(args: readonly string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<LocusResult> {
  return settle(startLocus(args, options))
}

/** Parses every stdout line as JSON: what `--json` promises. */
export function jsonLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}

/**
 * Calls `onLine` with each JSON line a `--json` process prints while it runs
 * (for killing or interrupting it at a chosen moment).
 */
export function onJsonLine(child: ChildProcess, onLine: (line: Record<string, unknown>) => void): void {
  let buffered = ''
  child.stdout?.on('data', (chunk: Buffer | string) => {
    buffered += chunk.toString()
    let newline = buffered.indexOf('\n')
    while (newline !== -1) {
      const text = buffered.slice(0, newline)
      buffered = buffered.slice(newline + 1)
      newline = buffered.indexOf('\n')
      if (text.trim() !== '') onLine(JSON.parse(text) as Record<string, unknown>)
    }
  })
}

/** The PostgreSQL client the store package uses (the CLI has no database client of its own to create a database with). */
interface PgClient {
  connect(): Promise<unknown>
  query(sql: string): Promise<{ rows: Record<string, unknown>[] }>
  end(): Promise<unknown>
}

/** Runs one statement (create or drop a test database, say) on a connection of its own. */
export async function adminQuery(connectionString: string | undefined, sql: string): Promise<void> {
  await pgRows(connectionString, sql)
}

/** Runs one query on a connection of its own and resolves its rows. */
export async function pgRows(connectionString: string | undefined, sql: string): Promise<Record<string, unknown>[]> {
  const pg = createRequire(join(repoRoot, 'packages', 'store-postgres', 'package.json'))('pg') as { Client: new (options: { connectionString: string | undefined }) => PgClient }
  const client = new pg.Client({ connectionString })
  await client.connect()
  try {
    return (await client.query(sql)).rows
  } finally {
    await client.end()
  }
}

/**
 * Resolves with the first match of `pattern` in what the process has printed
 * on `stream` (stdout by default), or rejects when it exits first.
 */
export function waitForOutput(child: ChildProcess, pattern: RegExp, stream: 'stdout' | 'stderr' = 'stdout'): Promise<RegExpMatchArray> {
  let text = ''
  return new Promise((resolveMatch, reject) => {
    child[stream]?.on('data', (chunk: Buffer) => {
      text += chunk.toString()
      const match = pattern.exec(text)
      if (match !== null) resolveMatch(match)
    })
    child.once('exit', (code) => {
      reject(new Error(`locus exited (${String(code)}) before printing ${String(pattern)} on ${stream}: ${text}`))
    })
  })
}

/** Polls `probe` every 100 ms until it returns a value, or fails naming `what` after `timeoutMs`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolveWait) => setTimeout(resolveWait, 100))
  }
}
