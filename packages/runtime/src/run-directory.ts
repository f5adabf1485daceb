import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { RUN_LAYOUT, type RunPaths, runPaths } from '@locus/journal'
import { RUN_EXISTS } from '@locus/store'
import { RunOwnershipError } from './errors.js'
import { createRunId } from './ids.js'

/** How many fresh ids a run tries before giving up when each one is already taken. */
export const RUN_ID_ATTEMPTS = 5

function alreadyExists(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'EEXIST'
}

/** Options of {@link claimRunDirectory}. */
export interface ClaimRunDirectoryOptions {
  /** The caller's own id; taken already means refused, never shared. */
  readonly runId?: string | undefined
  /** The time the generated id's stamp shows. */
  readonly now: Date
  /** The id source for generated ids. Internal: tests inject one that clashes. @default createRunId */
  readonly newRunId?: ((now: Date) => string) | undefined
}

/**
 * Creates a fresh run's directory exclusively: `mkdir` without `recursive` on
 * the run's own segment, so exactly one run ever gets it. An id the caller
 * chose that is already taken throws `RUN_EXISTS` with nothing written;
 * a generated id that clashes is replaced by a new one, up to
 * {@link RUN_ID_ATTEMPTS} tries.
 */
export function claimRunDirectory(runsDir: string, options: ClaimRunDirectoryOptions): RunPaths {
  if (options.runId !== undefined) {
    const paths = runPaths(runsDir, options.runId)
    mkdirSync(paths.runsDir, { recursive: true })
    try {
      mkdirSync(paths.rootDir)
    } catch (error) {
      if (!alreadyExists(error)) throw error
      throw new RunOwnershipError(
        RUN_EXISTS,
        `Run "${options.runId}" already exists in ${paths.runsDir}; a new run never writes into an existing one. Continue it with resumeRun, check it with replayRun, or start the new run under another id.`,
        { runId: options.runId, runDir: paths.rootDir, cause: error },
      )
    }
    return paths
  }
  const generate = options.newRunId ?? createRunId
  const taken: string[] = []
  for (let attempt = 0; attempt < RUN_ID_ATTEMPTS; attempt += 1) {
    const paths = runPaths(runsDir, generate(options.now))
    if (attempt === 0) mkdirSync(paths.runsDir, { recursive: true })
    try {
      mkdirSync(paths.rootDir)
      return paths
    } catch (error) {
      if (!alreadyExists(error)) throw error
      taken.push(paths.storageRootRunId)
    }
  }
  const last = runPaths(runsDir, taken.at(-1) ?? 'run')
  throw new RunOwnershipError(
    RUN_EXISTS,
    `Could not find a free run id in ${last.runsDir}: ${RUN_ID_ATTEMPTS} fresh ids were all taken (${taken.join(', ')}).`,
    { runId: last.storageRootRunId, runDir: last.rootDir },
  )
}

/** The number in an execution id such as `resume-007`; 0 for anything else. */
function executionNumber(prefix: string, executionId: string): number {
  if (!executionId.startsWith(prefix)) return 0
  const number = Number(executionId.slice(prefix.length))
  return Number.isSafeInteger(number) && number > 0 ? number : 0
}

/** The execution id after the highest one seen: `resume-001` when none was. */
export function nextExecutionId(prefix: string, seen: readonly string[]): string {
  return formatExecutionId(prefix, Math.max(0, ...seen.map((executionId) => executionNumber(prefix, executionId))) + 1)
}

function formatExecutionId(prefix: string, number: number): string {
  return `${prefix}${String(number).padStart(3, '0')}`
}

/**
 * Allocates the next nested execution directory (`resume-NNN`, `replay-NNN`)
 * exclusively: starts after the highest number the caller saw and, when a
 * concurrent caller took that number meanwhile (`EEXIST`), takes the next one.
 * Returns the new execution id; its directory exists and belongs to the caller alone.
 */
export function claimExecutionDirectory(rootDir: string, prefix: string, seen: readonly string[]): string {
  const executionsDir = join(rootDir, RUN_LAYOUT.executions)
  mkdirSync(executionsDir, { recursive: true })
  let number = executionNumber(prefix, nextExecutionId(prefix, seen))
  for (let tries = 0; tries < 10_000; tries += 1, number += 1) {
    const executionId = formatExecutionId(prefix, number)
    try {
      mkdirSync(join(executionsDir, executionId))
      return executionId
    } catch (error) {
      if (!alreadyExists(error)) throw error
    }
  }
  throw new Error(`Could not allocate an execution directory ${prefix}NNN in ${executionsDir}: every number tried was taken.`)
}
