// The repository's own source, as the scan tests read it: every package's and
// app's `src` and `bench` files, tests beside the code left out.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository's root directory. */
export const repoRoot = fileURLToPath(new URL('../..', import.meta.url))

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir).flatMap((entry) => {
    if (entry === 'node_modules' || entry === 'dist') return []
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return /\.tsx?$/.test(entry) && !/\.test(-d)?\.tsx?$/.test(entry) ? [path] : []
  })
}

/** Absolute paths of every `.ts`/`.tsx` source file under `packages/*` and `apps/*` (`src` and `bench`), tests excluded. */
export function projectSourceFiles(): string[] {
  const projects = ['packages', 'apps'].flatMap((group) => readdirSync(join(repoRoot, group)).map((name) => join(repoRoot, group, name)))
  return projects.flatMap((project) => ['src', 'bench'].flatMap((dir) => sourceFiles(join(project, dir))))
}
