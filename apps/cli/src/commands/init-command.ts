import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { EXIT_CODES, type ExitCode } from '../exit-codes.js'
import { displayPath } from '../format-summary.js'
import { fixturesTemplate, workflowTemplate } from '../init-templates.js'

/** Flags of `locus init`. */
export interface InitFlags {
  readonly dir?: string | undefined
  readonly force?: boolean | undefined
}

/** The name `locus init` uses when none is given. */
export const DEFAULT_WORKFLOW_NAME = 'my-workflow'

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/

/**
 * Whether a `.ts` file in `dir` loads as an ES module: the nearest
 * package.json says `"type": "module"`. Otherwise `locus init` writes `.mts`,
 * which is an ES module anywhere.
 */
export function isModuleDirectory(dir: string): boolean {
  let current = resolve(dir)
  for (;;) {
    const manifest = join(current, 'package.json')
    if (existsSync(manifest)) {
      try {
        return (JSON.parse(readFileSync(manifest, 'utf8')) as { type?: unknown }).type === 'module'
      } catch {
        return false
      }
    }
    const parent = dirname(current)
    if (parent === current) return false
    current = parent
  }
}

/**
 * `locus init [name]`: writes a workflow file and a fixtures file for the
 * scripted host to start from, and says how to run them. Refuses to
 * overwrite unless `--force`.
 */
export function initCommand(name: string | undefined, flags: InitFlags, io: CliIo): ExitCode {
  const workflowName = name ?? DEFAULT_WORKFLOW_NAME
  if (!NAME_PATTERN.test(workflowName)) {
    throw new CliError('CLI_USAGE', `Workflow name ${JSON.stringify(workflowName)} must be 1 to 64 letters, digits, "-" or "_", starting with a letter or digit.`)
  }
  const dir = resolve(io.cwd, flags.dir ?? '.')
  const extension = isModuleDirectory(dir) ? '.ts' : '.mts'
  const workflowPath = join(dir, `${workflowName}${extension}`)
  const fixturesPath = join(dir, `${workflowName}.fixtures.json`)
  if (flags.force !== true) {
    for (const path of [workflowPath, fixturesPath]) {
      if (existsSync(path)) throw new CliError('INIT_FILE_EXISTS', `${displayPath(path, io.cwd)} already exists; choose another name, or pass --force to overwrite it.`)
    }
  }
  mkdirSync(dir, { recursive: true })
  const shownWorkflow = displayPath(workflowPath, io.cwd)
  const shownFixtures = displayPath(fixturesPath, io.cwd)
  writeFileSync(workflowPath, workflowTemplate(workflowName, shownWorkflow, shownFixtures))
  writeFileSync(fixturesPath, fixturesTemplate())
  const locus = invokedAs(io.env)
  io.stdout.write(
    [
      `Created ${shownWorkflow} and ${shownFixtures}.`,
      '',
      'Run it with the scripted host:',
      `  ${locus} run ${shownWorkflow} --host scripted --fixtures ${shownFixtures}`,
      'Or against a real model:',
      `  ${locus} run ${shownWorkflow} --host openai-compatible --base-url http://localhost:11434/v1 --model llama3.2`,
      '',
    ].join('\n'),
  )
  return EXIT_CODES.completed
}

/**
 * How the person typed `locus`, so the next command we print runs as written:
 * from a clone it is the root script (`npm run locus -- …`, which npm and pnpm
 * announce as the lifecycle event `locus`), elsewhere the installed binary.
 */
function invokedAs(env: CliIo['env']): string {
  return env.npm_lifecycle_event === 'locus' ? 'npm run locus --' : 'locus'
}
