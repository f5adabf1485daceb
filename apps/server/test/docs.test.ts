// docs/server.md, run as a user would: its server example starts in a child
// process (with LOCUS_API_KEYS set), every ```sh block runs in bash with
// curl against it, and each block's output must match the ```text block after
// it. Ids, times and durations differ from run to run; everything else
// (statuses, codes, dispositions, messages, seqs, counts) must be as written.
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const packageDir = fileURLToPath(new URL('..', import.meta.url))
const documentPath = join(packageDir, '../../docs/server.md')
const text = readFileSync(documentPath, 'utf8')

interface Block {
  readonly language: string
  readonly code: string
  readonly line: number
}

const blocks: Block[] = [...text.matchAll(/^```(\w*)[^\n]*\n([\s\S]*?)^```\s*$/gm)].map((match) => ({
  language: match[1] ?? '',
  code: match[2] ?? '',
  line: text.slice(0, match.index).split('\n').length,
}))
const serverExample = blocks.find((block) => block.language === 'ts' && block.code.includes('startServer('))
const examples = blocks.flatMap((block, index) => {
  if (block.language !== 'sh') return []
  const next = blocks[index + 1]
  return [{ ...block, expected: next?.language === 'text' ? next.code : undefined }]
})

const RUN_ID = /\d{8}-\d{6}-[a-z0-9]{12}/g
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/
/** Numbers that change from run to run. */
const VARYING_NUMBERS = new Set(['durationMs', 'activeRuns', 'openStreams'])

/** Compares one documented value with the real one; returns the differences. */
function compare(expected: unknown, actual: unknown, path: string): string[] {
  if (expected === null || typeof expected === 'boolean') return expected === actual ? [] : [`${path}: expected ${String(expected)}, got ${JSON.stringify(actual)}`]
  if (typeof expected === 'number') {
    if (typeof actual !== 'number') return [`${path}: expected a number, got ${JSON.stringify(actual)}`]
    const key = path.split('.').at(-1) ?? ''
    return VARYING_NUMBERS.has(key) || expected === actual ? [] : [`${path}: expected ${expected}, got ${actual}`]
  }
  if (typeof expected === 'string') {
    if (typeof actual !== 'string') return [`${path}: expected a string, got ${JSON.stringify(actual)}`]
    if (ISO_TIME.test(expected)) return ISO_TIME.test(actual) ? [] : [`${path}: expected a time, got ${actual}`]
    const pattern = expected
      .replace(RUN_ID, '\u0000')
      .split('...')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replaceAll('\u0000', '\\d{8}-\\d{6}-[a-z0-9]{12}'))
      .join('[\\s\\S]*')
    return new RegExp(`^${pattern}$`).test(actual) ? [] : [`${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`]
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [`${path}: expected an array, got ${JSON.stringify(actual)}`]
    if (actual.length !== expected.length) return [`${path}: expected ${expected.length} items, got ${actual.length}: ${JSON.stringify(actual)}`]
    return expected.flatMap((item, index) => compare(item, actual[index], `${path}[${index}]`))
  }
  if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) return [`${path}: expected an object, got ${JSON.stringify(actual)}`]
  return Object.entries(expected as Record<string, unknown>).flatMap(([key, value]) =>
    key in actual ? compare(value, (actual as Record<string, unknown>)[key], `${path}.${key}`) : [`${path}: no field "${key}" in ${JSON.stringify(actual)}`],
  )
}

/** Compares a command's output with the documented one: JSON (with a status line), NDJSON, an event stream, or plain text. */
function compareOutput(expected: string, actual: string): string[] {
  const expectedLines = expected.trimEnd().split('\n')
  const actualLines = actual.trimEnd().split('\n')
  const problems: string[] = []
  if (/^\d{3}$/.test(expectedLines.at(-1) ?? '')) {
    const status = actualLines.pop()
    if (status !== expectedLines.pop()) problems.push(`status: expected ${expected.trimEnd().split('\n').at(-1)}, got ${String(status)}`)
  }
  const want = expectedLines.join('\n')
  const got = actualLines.join('\n')
  if (want.startsWith('retry: ')) {
    const frames = (source: string) => source.trim().split(/\n\n+/).map((frame) => Object.fromEntries(frame.split('\n').map((row) => [row.slice(0, row.indexOf(':')), row.slice(row.indexOf(':') + 2)])))
    const wanted = frames(want)
    const gotten = frames(got)
    if (wanted.length !== gotten.length) return [...problems, `expected ${wanted.length} frames, got ${gotten.length}:\n${got}`]
    return [
      ...problems,
      ...wanted.flatMap((frame, index) =>
        Object.entries(frame).flatMap(([field, value]) =>
          field === 'data' ? compare(JSON.parse(value), JSON.parse(gotten[index]?.data ?? 'null'), `frame ${index}.data`) : value === gotten[index]?.[field] ? [] : [`frame ${index}.${field}: expected ${value}, got ${String(gotten[index]?.[field])}`],
        ),
      ),
    ]
  }
  try {
    return [...problems, ...compare(JSON.parse(want), JSON.parse(got), 'body')]
  } catch {
    // Not one JSON document: NDJSON, or plain text.
  }
  const isJson = (line: string): boolean => {
    try {
      JSON.parse(line)
      return true
    } catch {
      return false
    }
  }
  if (want.split('\n').every(isJson)) {
    const wanted = want.split('\n')
    const gotten = got.split('\n')
    if (wanted.length !== gotten.length) return [...problems, `expected ${wanted.length} lines, got ${gotten.length}:\n${got}`]
    return [...problems, ...wanted.flatMap((line, index) => compare(JSON.parse(line), JSON.parse(gotten[index] ?? 'null'), `line ${index + 1}`))]
  }
  return want === got ? problems : [...problems, `expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`]
}

const key = 'docs-example-key-0000000001'
const workDir = join(packageDir, '.docs-snippets')
let child: ChildProcess | undefined
let url = ''
let runDir = ''

beforeAll(async () => {
  if (serverExample === undefined) throw new Error('docs/server.md has no server example')
  mkdirSync(workDir, { recursive: true })
  runDir = mkdtempSync(join(workDir, 'server-'))
  const file = join(runDir, 'server.mts')
  writeFileSync(file, serverExample.code)
  // In the package, so '@locus/server', '@locus/runtime' and 'zod' resolve as they do for a user; its runs go to runDir/.locus-pi.
  child = spawn(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', file], {
    cwd: runDir,
    env: { ...process.env, PORT: '0', LOCUS_API_KEYS: key },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`the server example did not start:\n${output}`))
    }, 60_000)
    const onData = (chunk: Buffer): void => {
      output += chunk.toString()
      const match = /listening on (http:\/\/\S+)/.exec(output)
      if (match !== null) {
        clearTimeout(timer)
        resolve(match[1] as string)
      }
    }
    child?.stdout?.on('data', onData)
    child?.stderr?.on('data', onData)
    child?.once('exit', (code) => {
      reject(new Error(`the server example exited (${String(code)}):\n${output}`))
    })
  })
}, 90_000)

afterAll(async () => {
  if (child !== undefined && child.exitCode === null) {
    const exited = new Promise<number | null>((resolve) => child?.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
  }
  rmSync(workDir, { recursive: true, force: true })
})

describe('docs/server.md', () => {
  it('has the server example and curl examples, each with its output', () => {
    expect(serverExample).toBeDefined()
    expect(examples.length).toBeGreaterThan(10)
    for (const example of examples) expect(example.expected, `docs/server.md:${example.line}`).toBeDefined()
  })

  let runId = ''
  it.each(examples.map((example) => [`docs/server.md:${example.line}`, example] as const))('%s', async (_name, example) => {
    const { stdout } = await run('bash', ['-c', example.code], {
      env: { ...process.env, LOCUS_URL: url, LOCUS_KEY: key, RUN_ID: runId },
      timeout: 40_000,
    })
    const problems = compareOutput(example.expected ?? '', stdout)
    expect(problems, `output:\n${stdout}`).toEqual([])
    // The docs say "export RUN_ID=<runId>" after starting a run; so does this test.
    if (/\/runs"?\s/.test(example.code) && example.code.includes('-X POST') && example.code.includes('/v1/workflows/')) {
      const started = /"runId":"([^"]+)"/.exec(stdout)
      if (started !== null) runId = started[1] as string
    }
  })

  it('the server shuts down on SIGTERM', async () => {
    const exited = new Promise<number | null>((resolve) => child?.once('exit', resolve))
    child?.kill('SIGTERM')
    expect(await exited).toBe(0)
  })
})
