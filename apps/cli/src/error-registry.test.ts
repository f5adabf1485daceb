import { COST_ERROR_CODES } from '@locus/cost'
import { GROUP_INVALID_INPUT, GROUP_OBSERVER_FAILED, WORKFLOW_CANCELLED, WORKFLOW_GROUP_FAILURE, WORKFLOW_INVOCATION_CAP, WORKFLOW_RUN_DEADLINE } from '@locus/groups'
import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { AGENT_RESULT_INVALID, ERROR_FACTORY_INVALID, JOURNAL_FILE_ERROR_CODES, JOURNAL_LINE_INVALID, RUN_ID_INVALID, RunIdError } from '@locus/journal'
import { ERROR_CODE_REGISTRY, EXIT_CODE_OF_KIND, LocusError, UNKNOWN_ERROR_CODE, exitCodeOfError, httpStatusOfError } from '@locus/outcome'
import { PARTIAL_ERROR_CODES } from '@locus/partial'
import { PROTOCOL_HOST_OPTIONS_INVALID, PROTOCOL_MESSAGE_INVALID } from '@locus/protocol'
import { REPLAY_ERROR_CODES } from '@locus/replay'
import { RETRY_ERROR_CODES } from '@locus/retry'
import { HOST_CONTRACT_ERROR_CODES, RUNTIME_ERROR_CODES, RuntimeInputError } from '@locus/runtime'
import { SERVER_LOCUS_ERROR_CODES } from '@locus/server'
import { RunNotFoundError, STORE_ERROR_CODES } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { CLI_ERROR_CODES, CliError } from './cli-error.js'

/** Each package's own codes, as it exports them. */
const OWNED: Record<string, readonly string[]> = {
  '@locus/outcome': [UNKNOWN_ERROR_CODE, 'WORKFLOW_RESULT_PREPARATION'],
  '@locus/groups': [GROUP_INVALID_INPUT, GROUP_OBSERVER_FAILED, WORKFLOW_CANCELLED, WORKFLOW_GROUP_FAILURE, WORKFLOW_INVOCATION_CAP, WORKFLOW_RUN_DEADLINE],
  '@locus/journal': [...JOURNAL_FILE_ERROR_CODES, JOURNAL_LINE_INVALID, RUN_ID_INVALID, AGENT_RESULT_INVALID, ERROR_FACTORY_INVALID],
  '@locus/partial': PARTIAL_ERROR_CODES,
  '@locus/protocol': [PROTOCOL_MESSAGE_INVALID, PROTOCOL_HOST_OPTIONS_INVALID],
  '@locus/replay': REPLAY_ERROR_CODES,
  '@locus/retry': RETRY_ERROR_CODES,
  '@locus/runtime': RUNTIME_ERROR_CODES,
  '@locus/host-contract': HOST_CONTRACT_ERROR_CODES,
  '@locus/store': STORE_ERROR_CODES,
  '@locus/host-ai-sdk': ['AI_SDK_HOST_OPTIONS_INVALID'],
  '@locus/cost': COST_ERROR_CODES,
  '@locus/cli': CLI_ERROR_CODES,
  '@locus/server': SERVER_LOCUS_ERROR_CODES,
}

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')

/** The source files of every package and app that ships (not tests, not the benchmarks). */
function sourceFiles(): string[] {
  const files: string[] = []
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'test' && entry.name !== 'dist') walk(path)
      } else if (/\.(ts|mts|tsx)$/.test(entry.name) && !/\.(test|bench)\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) {
        files.push(path)
      }
    }
  }
  for (const root of ['packages', 'apps']) {
    for (const entry of readdirSync(join(REPO, root), { withFileTypes: true })) {
      if (entry.isDirectory() && entry.name !== 'bench') walk(join(REPO, root, entry.name, 'src'))
    }
  }
  return files
}

/** Codes written as literals where an error is made: `{ code: 'X' }` or `new SomeError('X', ...)`. */
const THROWN_CODE = /(?:\bcode:\s*|\bnew\s+[A-Za-z]*Error\(\s*)'([A-Z][A-Z0-9_]+)'/g

describe('the error code registry', () => {
  it('registers every code a package or app makes an error with, literal or exported', () => {
    const unregistered: string[] = []
    const files = sourceFiles()
    expect(files.length).toBeGreaterThan(100)
    for (const file of files) {
      for (const match of readFileSync(file, 'utf8').matchAll(THROWN_CODE)) {
        const code = match[1] ?? ''
        if (!Object.hasOwn(ERROR_CODE_REGISTRY, code)) unregistered.push(`${code} (${file.slice(REPO.length + 1)})`)
      }
    }
    expect(unregistered).toEqual([])
  })

  it('gives every code one owner: no two packages export the same code', () => {
    const owners = new Map<string, string[]>()
    for (const [owner, codes] of Object.entries(OWNED)) for (const code of codes) owners.set(code, [...(owners.get(code) ?? []), owner])
    const shared = [...owners].filter(([, list]) => list.length > 1)
    expect(shared).toEqual([])
  })

  it('lists every exported code under the package that exports it, and nothing else', () => {
    const exported = Object.entries(OWNED).flatMap(([owner, codes]) => codes.map((code) => [code, owner] as const))
    expect(Object.fromEntries(exported)).toEqual(Object.fromEntries(Object.entries(ERROR_CODE_REGISTRY).map(([code, entry]) => [code, entry.owner])))
  })

  it('turns a code into the CLI exit code and the HTTP status by its kind', () => {
    expect(exitCodeOfError(new RuntimeInputError('WORKFLOW_INPUT_INVALID', 'bad input', []))).toBe(2)
    expect(exitCodeOfError(new RunNotFoundError('r', 'runs'))).toBe(2)
    expect(httpStatusOfError(new RunNotFoundError('r', 'runs'))).toBe(404)
    expect(exitCodeOfError(new CliError('CLI_USAGE', 'usage'))).toBe(2)
    expect(exitCodeOfError(new RunIdError('run id', '../x'))).toBe(2)
    expect(exitCodeOfError(new LocusError('cancelled', { code: WORKFLOW_CANCELLED }))).toBe(EXIT_CODE_OF_KIND.cancelled)
    expect(exitCodeOfError(new Error('plain'))).toBe(1)
    expect(httpStatusOfError(new LocusError('who knows', { code: 'NOT_REGISTERED' }))).toBe(500)
  })
})
