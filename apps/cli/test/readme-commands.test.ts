import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
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

/**
 * PATH with pnpm hidden: a scratch directory first on the PATH holds a `pnpm`
 * that fails, so whatever directory holds the real one (`.tools`, or the
 * global `bin` that `npm i -g pnpm` shares with npm and node) stays on the
 * PATH and npm stays reachable.
 */
function pathShadowingPnpm(basePath: string): string {
  const shadowDir = mkdtempSync(join(tmpdir(), 'locus-no-pnpm-'))
  writeFileSync(join(shadowDir, 'pnpm'), '#!/bin/sh\necho "pnpm is hidden by this test" >&2\nexit 127\n', { mode: 0o755 })
  return [shadowDir, ...basePath.split(delimiter).filter((dir) => dir !== '')].join(delimiter)
}

/**
 * A PATH laid out as on a machine with node from a version manager and pnpm
 * installed by `npm i -g pnpm`: node, npm and pnpm in one `bin`, and no other
 * directory on the PATH holding any of them.
 */
function pathWithGlobalPnpmBesideNpm(): string {
  const globalBin = mkdtempSync(join(tmpdir(), 'locus-global-bin-'))
  const npmPath = spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim()
  symlinkSync(process.execPath, join(globalBin, 'node'))
  symlinkSync(realpathSync(npmPath), join(globalBin, 'npm'))
  writeFileSync(join(globalBin, 'pnpm'), '#!/bin/sh\necho 10.0.0\n', { mode: 0o755 })
  // The system's own directory (here often the same `/usr/bin` as npm's) still gives npm a shell.
  const systemBin = mkdtempSync(join(tmpdir(), 'locus-system-bin-'))
  symlinkSync('/bin/sh', join(systemBin, 'sh'))
  const others = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((dir) => dir !== '' && !['node', 'npm', 'pnpm'].some((name) => existsSync(join(dir, name))))
  return [globalBin, systemBin, ...others].join(delimiter)
}

/** Runs `npm run locus -- --help` from the root with pnpm hidden on top of `basePath`. */
function helpWithoutPnpm(basePath: string): void {
  const env = { ...cleanEnv(), PATH: pathShadowingPnpm(basePath) }
  expect(spawnSync('pnpm', ['--version'], { cwd: repoRoot, env }).status, 'pnpm must not work for this check').not.toBe(0)
  const result = spawnSync('npm', ['run', 'locus', '--', '--help'], { cwd: repoRoot, env, encoding: 'utf8' })
  expect(result.error).toBeUndefined()
  expect(result.status).toBe(0)
  expect(result.stdout).toMatch(/Usage: locus \[options\] \[command\]/)
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
    helpWithoutPnpm(process.env.PATH ?? '')
  })

  it('`npm run locus -- --help` runs with pnpm hidden where a global pnpm shares its directory with npm', () => {
    const basePath = pathWithGlobalPnpmBesideNpm()
    expect(spawnSync('pnpm', ['--version'], { cwd: repoRoot, env: { ...cleanEnv(), PATH: basePath }, encoding: 'utf8' }).stdout.trim(), 'the laid-out PATH has a working pnpm').toBe('10.0.0')
    helpWithoutPnpm(basePath)
  })
})
