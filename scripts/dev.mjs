#!/usr/bin/env node
// The entry point behind the README's two commands. It needs only Node and npm:
// it brings pnpm if it is missing, installs the workspace, builds what is stale
// (turbo caches the rest), then runs the demo or the whole test suite.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const PNPM_VERSION = '10.34.9'
const localTools = join(root, '.tools')
const localBin = join(localTools, 'node_modules', '.bin')
const env = { ...process.env, PATH: `${localBin}${delimiter}${process.env.PATH ?? ''}` }

function run(command, args, { allowFailure = false } = {}) {
  const result = spawnSync(command, args, { cwd: root, env, stdio: 'inherit' })
  if (result.error) {
    if (allowFailure) return 1
    console.error(`locus dev: could not start ${command}: ${result.error.message}`)
    process.exit(1)
  }
  const status = result.status ?? 1
  if (status !== 0 && !allowFailure) {
    console.error(`locus dev: "${command} ${args.join(' ')}" exited with ${status}`)
    process.exit(status)
  }
  return status
}

function hasPnpm() {
  const probe = spawnSync('pnpm', ['--version'], { cwd: root, env, stdio: 'ignore' })
  return probe.status === 0
}

function ensurePnpm() {
  if (hasPnpm()) return
  console.log(`locus dev: pnpm not found, installing pnpm@${PNPM_VERSION} into .tools/`)
  run('npm', ['install', '--prefix', localTools, '--no-save', '--no-audit', '--no-fund', `pnpm@${PNPM_VERSION}`])
  if (!hasPnpm() && !existsSync(join(localBin, 'pnpm'))) {
    console.error('locus dev: pnpm is still missing after installing it; install it by hand with "npm i -g pnpm@10"')
    process.exit(1)
  }
}

function prepare() {
  ensurePnpm()
  run('pnpm', ['install', '--frozen-lockfile', '--prefer-offline'])
  run('pnpm', ['exec', 'turbo', 'run', 'build', '--output-logs=errors-only'])
}

const task = process.argv[2]
switch (task) {
  case 'demo':
    prepare()
    process.exit(run('pnpm', ['--filter', '@locus/examples', 'run', 'demo'], { allowFailure: true }))
    break
  case 'test':
    prepare()
    process.exit(run('pnpm', ['exec', 'vitest', 'run', ...process.argv.slice(3)], { allowFailure: true }))
    break
  default:
    console.error('usage: node scripts/dev.mjs <demo|test> [vitest arguments]')
    process.exit(2)
}
