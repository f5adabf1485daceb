import { spawnSync } from 'node:child_process'
import { accessSync, constants, statSync } from 'node:fs'
import { basename, dirname, extname, isAbsolute, relative, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { type ScheduleDefinition, type WorkflowDefinition, type WorkflowFunction, isScheduleDefinition, isWorkflowDefinition } from '@locus/runtime'
import { tsImport } from 'tsx/esm/api'
import { CliError } from './cli-error.js'
import { LENT_PACKAGES } from './module-fallback.js'

/** The file extensions `locus run` loads. */
export const WORKFLOW_EXTENSIONS = ['.ts', '.mts', '.js', '.mjs'] as const

/** A workflow loaded from a file. */
export interface LoadedWorkflow {
  /** The definition (or bare async function) the module exports. */
  readonly workflow: WorkflowDefinition | WorkflowFunction
  /** The absolute path of the file, recorded in `run_start.options.source`. */
  readonly path: string
  /** Which export held it: `default` or `workflow`. */
  readonly exportName: 'default' | 'workflow'
}

function isWorkflowLike(value: unknown): value is WorkflowDefinition | WorkflowFunction {
  if (typeof value === 'function') return true
  if (isWorkflowDefinition(value)) return true
  return typeof value === 'object' && value !== null && typeof (value as { run?: unknown }).run === 'function'
}

function checkFile(path: string, shown: string): void {
  let isFile: boolean
  try {
    isFile = statSync(path).isFile()
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new CliError('WORKFLOW_FILE_NOT_FOUND', `Workflow file not found: ${shown}. Check the path, or create one with \`locus init\`.`, { cause: error })
    }
    throw new CliError('WORKFLOW_FILE_UNREADABLE', `Cannot read workflow file ${shown}: ${(error as Error).message}.`, { cause: error })
  }
  if (!isFile) throw new CliError('WORKFLOW_FILE_UNREADABLE', `${shown} is not a file; give the path of a workflow module (.ts, .mts, .js or .mjs).`)
  try {
    accessSync(path, constants.R_OK)
  } catch (error) {
    throw new CliError('WORKFLOW_FILE_UNREADABLE', `Cannot read workflow file ${shown}: permission denied. Check its permissions.`, { cause: error })
  }
  const extension = extname(path)
  if (!(WORKFLOW_EXTENSIONS as readonly string[]).includes(extension)) {
    throw new CliError('WORKFLOW_FILE_UNREADABLE', `${shown} is not a workflow module: locus loads ${WORKFLOW_EXTENSIONS.join(', ')} files.`)
  }
}

/** Node's own syntax check names the file and line, which an ES module's SyntaxError does not. */
function locateSyntaxError(path: string): string | undefined {
  const checked = spawnSync(process.execPath, ['--check', path], { encoding: 'utf8' })
  if (checked.status === 0) return undefined
  const firstLine = checked.stderr.split('\n').find((line) => line.trim().length > 0)
  return firstLine?.startsWith(path) === true ? firstLine.slice(path.length + 1) : undefined
}

function describeImportFailure(error: unknown, path: string, shown: string): CliError {
  const message = error instanceof Error ? error.message : String(error)
  const name = error instanceof Error ? error.name : ''
  // esbuild (through tsx) reports `<file>:<line>:<column>: ERROR: <what>` for TypeScript.
  const transform = /^(.+?):(\d+):(\d+): ERROR: (.+)$/m.exec(message)
  if (name === 'TransformError' || transform !== null) {
    const where = transform === null ? shown : `${sourceName(transform[1] ?? path, path, shown)}:${transform[2] ?? '?'}:${Number(transform[3] ?? 0) + 1}`
    return new CliError('WORKFLOW_SYNTAX_ERROR', `Syntax error in ${where}: ${transform?.[4] ?? message}`, { cause: error })
  }
  if (name === 'SyntaxError') {
    const line = locateSyntaxError(path)
    const where = line === undefined ? shown : `${shown}:${line}`
    return new CliError('WORKFLOW_SYNTAX_ERROR', `Syntax error in ${where}: ${message}`, { cause: error })
  }
  const code = (error as { code?: unknown }).code
  if (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') {
    const missing = /Cannot find (?:module|package) '([^']+)'/.exec(message)?.[1] ?? 'a module'
    const lent = LENT_PACKAGES.some((pkg) => missing === pkg || missing.startsWith(`${pkg}/`))
    const hint = lent
      ? ` Install it beside the workflow (npm install ${missing}), or make the file an ES module (name it .mts, or set "type": "module" in its package.json) so locus can lend its own copy.`
      : ' Install it in the workflow\'s project, or fix the import.'
    return new CliError('WORKFLOW_IMPORT_FAILED', `${shown} imports ${missing}, which cannot be found.${hint}`, { cause: error })
  }
  return new CliError('WORKFLOW_IMPORT_FAILED', `Loading ${shown} failed: ${message}`, { cause: error })
}

/**
 * The file esbuild blamed, as the user knows it. tsx hands esbuild the
 * workflow under a name with a plain `.ts` extension, so a report about
 * `triage.ts` may mean the `triage.mts` that was loaded.
 */
function sourceName(reported: string, loaded: string, shown: string): string {
  const stem = (file: string): string => basename(file, extname(file))
  const sameDir = !isAbsolute(reported) || dirname(reported) === dirname(loaded)
  return sameDir && stem(reported) === stem(loaded) ? shown : relativeOrAbsolute(reported)
}

function relativeOrAbsolute(path: string): string {
  const fromCwd = relative(process.cwd(), path)
  return fromCwd.startsWith('..') || fromCwd === '' ? path : fromCwd
}

/** A module given to `--workflows`: its workflow, if any, and the schedules it exports. */
export interface LoadedWorkflowModule {
  readonly workflow: LoadedWorkflow | undefined
  /** `export const schedules = [defineSchedule(...)]`, or a default export made with `defineSchedule`. */
  readonly schedules: readonly ScheduleDefinition[]
  readonly path: string
  /** The module's export names, for messages. */
  readonly exportNames: readonly string[]
}

/**
 * Loads a module for `locus serve --workflows` / `locus worker --workflows`:
 * a workflow, schedules, or both.
 */
export async function loadWorkflowModule(file: string, cwd: string): Promise<LoadedWorkflowModule> {
  const path = resolve(cwd, file)
  const module = await importModule(file, cwd)
  const nested = module.default as { default?: unknown; schedules?: unknown } | undefined
  const schedules: ScheduleDefinition[] = []
  for (const value of [module.schedules, nested?.schedules]) {
    if (!Array.isArray(value)) continue
    for (const [index, entry] of value.entries()) {
      if (!isScheduleDefinition(entry)) {
        throw new CliError('CLI_USAGE', `${file}: schedules[${index}] was not made with defineSchedule({ id, workflow, cron | every, input, overlap, catchUpWindow }).`)
      }
      schedules.push(entry)
    }
    break
  }
  if (isScheduleDefinition(module.default)) schedules.push(module.default)
  else if (isScheduleDefinition(nested?.default)) schedules.push(nested.default)
  const workflow = workflowOf(module, path)
  return { workflow, schedules, path, exportNames: Object.keys(module).filter((key) => key !== '__esModule') }
}

async function importModule(file: string, cwd: string): Promise<Record<string, unknown>> {
  const path = resolve(cwd, file)
  checkFile(path, file)
  try {
    return (await tsImport(pathToFileURL(path).href, import.meta.url)) as Record<string, unknown>
  } catch (error) {
    throw describeImportFailure(error, path, file)
  }
}

function workflowOf(module: Record<string, unknown>, path: string): LoadedWorkflow | undefined {
  // A CommonJS module compiled by tsx arrives with its exports under `default`.
  const candidates: ReadonlyArray<readonly ['default' | 'workflow', unknown]> = [
    ['default', module.default],
    ['workflow', module.workflow],
    ['default', (module.default as { default?: unknown } | undefined)?.default],
    ['workflow', (module.default as { workflow?: unknown } | undefined)?.workflow],
  ]
  for (const [exportName, value] of candidates) {
    if (isWorkflowLike(value)) return { workflow: value, path, exportName }
  }
  return undefined
}

/**
 * Loads a workflow module (`.ts`, `.mts`, `.js` or `.mjs`; TypeScript through
 * tsx) and returns its default export, or its named export `workflow`.
 *
 * @throws {CliError} `WORKFLOW_FILE_NOT_FOUND`, `WORKFLOW_FILE_UNREADABLE`,
 *   `WORKFLOW_SYNTAX_ERROR` (with file and line), `WORKFLOW_IMPORT_FAILED`, or
 *   `WORKFLOW_EXPORT_MISSING` when neither export holds a workflow.
 *
 * @example
 * ```ts
 * const { workflow, path } = await loadWorkflow('docs/examples/triage/triage.ts', process.cwd())
 * ```
 */
export async function loadWorkflow(file: string, cwd: string): Promise<LoadedWorkflow> {
  const shown = file
  const path = resolve(cwd, file)
  const module = await importModule(file, cwd)
  const loaded = workflowOf(module, path)
  if (loaded !== undefined) return loaded
  const found = Object.keys(module).filter((key) => key !== '__esModule')
  throw new CliError(
    'WORKFLOW_EXPORT_MISSING',
    `${shown} has no workflow export: export one as default (export default defineWorkflow({ ... })) or as \`export const workflow\`. ` +
      (found.length === 0 ? 'The module exports nothing.' : `It exports: ${found.join(', ')}.`),
  )
}
