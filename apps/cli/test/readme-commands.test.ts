import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { cleanEnv, repoRoot } from './helpers.js'

/** The README and the guides a newcomer follows after `npm run demo` and `npm test`. */
const DOCS = ['README.md', 'apps/cli/README.md', ...readdirSync(join(repoRoot, 'docs')).filter((name) => name.endsWith('.md')).map((name) => join('docs', name))]

/** The shell lines of a markdown file's `sh` code blocks. */
function shellLines(markdown: string): string[] {
  const lines: string[] = []
  for (const block of markdown.matchAll(/```(?:sh|bash|shell)\n([\s\S]*?)```/g)) lines.push(...(block[1] ?? '').split('\n'))
  return lines.map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'))
}

/** PATH without any directory that holds pnpm (such as `.tools/node_modules/.bin`, where `npm run demo` installs it). */
function pathWithoutPnpm(): string {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .filter((dir) => dir !== '' && !existsSync(join(dir, 'pnpm')) && !dir.includes('.tools'))
    .join(delimiter)
}

describe('the README gives commands that work after its two set-up commands alone', () => {
  it('no doc tells a newcomer to run `pnpm locus`, which needs pnpm on the PATH', () => {
    for (const doc of DOCS) expect({ doc, pnpmLocus: readFileSync(join(repoRoot, doc), 'utf8').includes('pnpm locus') }).toEqual({ doc, pnpmLocus: false })
  })

  it('every README command line that runs the CLI uses `npm run locus -- <args>`', () => {
    const lines = shellLines(readFileSync(join(repoRoot, 'README.md'), 'utf8')).filter((line) => /(^|\s)locus(\s|$)/.test(line))
    expect(lines.length).toBeGreaterThan(5)
    for (const line of lines) expect(line).toMatch(/^npm run (-s )?locus -- \S/)
  })

  it('`npm run locus -- --help` runs the built CLI from the root with no pnpm on the PATH', () => {
    const PATH = pathWithoutPnpm()
    const env = { ...cleanEnv(), PATH }
    expect(spawnSync('pnpm', ['--version'], { cwd: repoRoot, env }).error, 'pnpm must not be reachable for this check').toBeDefined()
    const result = spawnSync('npm', ['run', 'locus', '--', '--help'], { cwd: repoRoot, env, encoding: 'utf8' })
    expect(result.error).toBeUndefined()
    expect(result.status).toBe(0)
    expect(result.stdout).toMatch(/Usage: locus \[options\] \[command\]/)
  })
})
