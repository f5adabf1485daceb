// Lints the repository one workspace package at a time, two at once.
//
// Type-checked linting builds a TypeScript program per tsconfig it meets; one
// eslint process over the whole monorepo holds every package's program at once
// and outgrew Node's default 4 GB heap. A process per package keeps each under
// about 1 GB. The last run covers everything outside the packages, so nothing
// `eslint .` would check is left out.
import { spawn } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..')
const groups = ['packages', 'apps', 'tooling']
const packageDirs = groups.flatMap((group) =>
  readdirSync(join(root, group))
    .map((name) => `${group}/${name}`)
    .filter((dir) => statSync(join(root, dir)).isDirectory()),
)
const eslint = join(root, 'node_modules', '.bin', 'eslint')
const jobs = [
  ...packageDirs.map((dir) => ({ name: dir, args: [dir] })),
  { name: 'everything else', args: ['.', ...groups.flatMap((group) => ['--ignore-pattern', `${group}/**`])] },
]

function lint(job) {
  return new Promise((resolve) => {
    const child = spawn(eslint, ['--max-warnings', '0', '--no-error-on-unmatched-pattern', ...job.args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    child.on('close', (code) => {
      process.stdout.write(`${code === 0 ? 'ok  ' : 'FAIL'} ${job.name}\n${code === 0 ? '' : output}`)
      resolve(code === 0)
    })
  })
}

const queue = [...jobs]
let failed = false
async function worker() {
  for (let job = queue.shift(); job !== undefined; job = queue.shift()) {
    if (!(await lint(job))) failed = true
  }
}
await Promise.all([worker(), worker()])
if (failed) {
  process.stderr.write('lint failed; see above\n')
  process.exit(1)
}
