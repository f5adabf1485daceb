/**
 * Builds the `locus` binary and the packages it imports when the build is
 * missing or older than their sources. CI builds everything before testing,
 * so there this is only a staleness check.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'

const repoRoot = resolve(import.meta.dirname, '..', '..', '..')
/** The workspace packages whose dist the binary loads at run time. */
const BUILT = ['apps/cli', 'packages/runtime', 'packages/journal', 'packages/outcome', 'packages/partial', 'packages/replay', 'packages/groups', 'packages/retry', 'packages/client']

function newestSource(dir: string): number {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path))
    else if (!entry.name.includes('.test.')) newest = Math.max(newest, statSync(path).mtimeMs)
  }
  return newest
}

function isStale(packageDir: string): boolean {
  const built = join(repoRoot, packageDir, 'dist', 'index.js')
  if (!existsSync(built)) return true
  return newestSource(join(repoRoot, packageDir, 'src')) > statSync(built).mtimeMs
}

export default function setup(): void {
  const stale = BUILT.filter(isStale)
  if (stale.length === 0 && existsSync(join(repoRoot, 'apps', 'cli', 'dist', 'cli.js'))) return
  execFileSync('pnpm', ['exec', 'turbo', 'run', 'build', '--filter=@locus/cli...', '--output-logs=errors-only'], { cwd: repoRoot, stdio: 'inherit' })
}
