import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { CliError } from './cli-error.js'

/**
 * The runs directory a command works in: `--runs-dir`, else `LOCUS_RUNS_DIR`,
 * else `<cwd>/.locus-pi/runs` (where the runtime puts runs by default).
 */
export function resolveRunsDir(flag: string | undefined, context: { readonly cwd: string; readonly env: Readonly<Record<string, string | undefined>> }): string {
  const chosen = flag ?? context.env.LOCUS_RUNS_DIR
  if (chosen !== undefined && chosen !== '') return resolve(context.cwd, chosen)
  return join(resolve(context.cwd), '.locus-pi', 'runs')
}

/**
 * Creates the runs directory if needed and proves it is writable by writing
 * and removing a probe file, so a run never starts where it could not record.
 *
 * @throws {CliError} `RUNS_DIR_NOT_WRITABLE` naming the directory and the reason.
 */
export function ensureWritableRunsDir(runsDir: string): void {
  const probe = join(runsDir, `.locus-write-probe-${process.pid}`)
  try {
    makeDirectories(runsDir)
    writeFileSync(probe, '')
    rmSync(probe, { force: true })
  } catch (error) {
    throw new CliError(
      'RUNS_DIR_NOT_WRITABLE',
      `The runs directory ${runsDir} is not writable (${(error as Error).message}). Pass --runs-dir <dir> with a directory you can write to.`,
      { cause: error },
    )
  }
}

/**
 * `mkdir -p`, one level at a time. Node's own recursive mkdir can spin forever
 * under pseudo file systems such as /proc; creating each missing level on its
 * own fails fast with the real error instead.
 */
function makeDirectories(dir: string): void {
  const missing: string[] = []
  let current = resolve(dir)
  while (!existsSync(current)) {
    missing.unshift(current)
    const parent = dirname(current)
    if (parent === current) break
    current = parent
  }
  for (const level of missing) mkdirSync(level)
}
