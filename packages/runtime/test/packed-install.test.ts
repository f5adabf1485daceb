// `npm i @locus/runtime` must not compile a native module or pull in a
// database client. The manifest check runs everywhere; the packed install
// (pnpm pack of the runtime's closure, npm install --ignore-scripts into an
// empty project, a workflow run on the memory store) needs the npm registry
// and about 15 s, so it runs in CI (CI=true) or with LOCUS_PACKED_INSTALL=1.
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const runPackedInstall = (process.env.CI ?? '') !== '' || process.env.LOCUS_PACKED_INSTALL === '1'

/** Database drivers and native modules a runtime install must not bring. */
const FORBIDDEN = ['better-sqlite3', 'pg', 'pg-native', 'sqlite3', 'mysql2']

interface Manifest {
  readonly name: string
  readonly dependencies?: Record<string, string>
  readonly optionalDependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
  readonly peerDependenciesMeta?: Record<string, { readonly optional?: boolean }>
  readonly scripts?: Record<string, string>
}

function workspaceManifests(): Map<string, { dir: string; manifest: Manifest }> {
  const found = new Map<string, { dir: string; manifest: Manifest }>()
  for (const name of readdirSync(join(root, 'packages'))) {
    const dir = join(root, 'packages', name)
    if (!existsSync(join(dir, 'package.json'))) continue
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest
    found.set(manifest.name, { dir, manifest })
  }
  return found
}

/** @locus/runtime and every workspace package it depends on, directly or not. */
function runtimeClosure(): { name: string; dir: string; manifest: Manifest }[] {
  const manifests = workspaceManifests()
  const seen = new Map<string, { name: string; dir: string; manifest: Manifest }>()
  const visit = (name: string): void => {
    if (seen.has(name)) return
    const entry = manifests.get(name)
    if (entry === undefined) throw new Error(`${name} is a workspace dependency but no packages/*/package.json names it`)
    seen.set(name, { name, ...entry })
    for (const [dep, range] of Object.entries(entry.manifest.dependencies ?? {})) {
      if (range.startsWith('workspace:')) visit(dep)
    }
  }
  visit('@locus/runtime')
  return [...seen.values()]
}

/** Where a manifest would make npm install a forbidden package. */
function forbiddenRequirements(manifest: Manifest): string[] {
  const problems: string[] = []
  for (const name of FORBIDDEN) {
    if (manifest.dependencies?.[name] !== undefined) problems.push(`${manifest.name} depends on ${name}`)
    if (manifest.optionalDependencies?.[name] !== undefined) problems.push(`${manifest.name} has ${name} as an optional dependency`)
    if (manifest.peerDependencies?.[name] !== undefined && manifest.peerDependenciesMeta?.[name]?.optional !== true) {
      problems.push(`${manifest.name} has ${name} as a required peer dependency (npm installs those)`)
    }
  }
  return problems
}

function run(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()))
    child.on('error', (error) => {
      reject(new Error(`could not start ${command} (${error.message}); run the tests through npm test, which puts pnpm on PATH`))
    })
    child.on('close', (code) => {
      if (code === 0) resolve(out)
      else reject(new Error(`${command} ${args.join(' ')} in ${cwd} exited with ${String(code)}:\n${out.slice(-4000)}`))
    })
  })
}

/**
 * The environment of a fresh project: without the settings pnpm exports for
 * itself (but with those that reach a registry), and without NODE_PATH, which
 * `pnpm exec` points at the workspace's packages, where better-sqlite3 is.
 */
function cleanEnv(): NodeJS.ProcessEnv {
  const kept = /^npm_config_(registry|cache|userconfig|proxy|https_proxy|noproxy|strict_ssl|cafile|@.*:registry)$/i
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => key !== 'NODE_PATH' && (!/^npm_/i.test(key) || kept.test(key))))
}

/** Every installed package directory under node_modules (scoped ones included, nested ones too). */
async function installedPackages(nodeModules: string): Promise<string[]> {
  const found: string[] = []
  for (const entry of await readdir(nodeModules, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue
    const dir = join(nodeModules, entry.name)
    if (entry.name.startsWith('@')) {
      found.push(...(await installedPackages(dir)))
      continue
    }
    found.push(dir)
    if (existsSync(join(dir, 'node_modules'))) found.push(...(await installedPackages(join(dir, 'node_modules'))))
  }
  return found
}

describe('the dependency closure of @locus/runtime', () => {
  it('requires no database driver or native module', () => {
    const closure = runtimeClosure()
    expect(closure.map((entry) => entry.name)).toContain('@locus/partial')
    expect(closure.flatMap((entry) => forbiddenRequirements(entry.manifest))).toEqual([])
  })

  it('the check above fails for a manifest that depends on a driver', () => {
    expect(forbiddenRequirements({ name: 'x', dependencies: { 'better-sqlite3': '^12.4.0' } })).toEqual(['x depends on better-sqlite3'])
    expect(forbiddenRequirements({ name: 'x', peerDependencies: { pg: '^8.16.0' } })).toEqual(['x has pg as a required peer dependency (npm installs those)'])
    expect(forbiddenRequirements({ name: 'x', peerDependencies: { pg: '^8.16.0' }, peerDependenciesMeta: { pg: { optional: true } } })).toEqual([])
  })
})

describe.skipIf(!runPackedInstall)('npm install of the packed runtime (CI, or LOCUS_PACKED_INSTALL=1)', () => {
  let work = ''
  afterAll(async () => {
    if (work !== '') await rm(work, { recursive: true, force: true })
  })

  it('installs with --ignore-scripts, compiles nothing, and runs a workflow on the memory store', async () => {
    work = await mkdtemp(join(tmpdir(), 'locus-packed-'))
    const packs = join(work, 'packs')
    const app = join(work, 'app')
    await mkdir(packs)
    await mkdir(app)

    // pnpm pack turns workspace:* into the real versions, as a publish does; it packs what `build` left in dist/.
    const closure = runtimeClosure()
    for (const { name, dir } of closure) {
      if (!existsSync(join(dir, 'dist'))) throw new Error(`${name} has no dist/; build it first (pnpm build, or npm test, which builds)`)
    }
    await Promise.all(closure.map(({ dir }) => run('pnpm', ['pack', '--pack-destination', packs], dir)))
    const tarballs = (await readdir(packs)).filter((file) => file.endsWith('.tgz')).map((file) => join(packs, file))
    expect(tarballs).toHaveLength(closure.length)

    await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'packed-runtime-check', private: true, type: 'module' }))
    await run('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error', ...tarballs, 'zod@^4.1.8'], app, cleanEnv())

    const nodeModules = join(app, 'node_modules')
    for (const driver of FORBIDDEN) expect(existsSync(join(nodeModules, driver)), `node_modules/${driver} was installed`).toBe(false)
    const packages = await installedPackages(nodeModules)
    const wouldCompile = packages.filter((dir) => {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest
      const scripts = manifest.scripts ?? {}
      return existsSync(join(dir, 'binding.gyp')) || scripts['install'] !== undefined || scripts['preinstall'] !== undefined || scripts['postinstall'] !== undefined
    })
    expect(wouldCompile.map((dir) => dir.slice(nodeModules.length + 1))).toEqual([])
    for (const { name } of closure) {
      const packed = readFileSync(join(nodeModules, name, 'package.json'), 'utf8')
      expect(packed, `${name} was packed with a workspace: range`).not.toContain('workspace:')
    }

    await writeFile(
      join(app, 'run.mjs'),
      `
import { openOutcomeStore } from '@locus/partial'
import { createScriptedHost, defineTool, defineWorkflow, runWorkflowScript } from '@locus/runtime'
import { createMemoryRunStore } from '@locus/store'
import { z } from 'zod'

const flow = defineWorkflow({
  name: 'packed',
  input: z.object({ ticket: z.string() }),
  tools: { lookup: defineTool({ input: z.object({ id: z.string() }), run: ({ id }) => ({ id, status: 'open' }) }) },
  async run({ input, agent, tool }) {
    const facts = await tool('lookup', { id: input.ticket })
    const summary = await agent('Summarise ' + input.ticket)
    return { ok: true, facts, summary: summary.answer }
  },
})
const run = await runWorkflowScript(flow, {
  input: { ticket: 'T-1' },
  store: createMemoryRunStore(),
  host: createScriptedHost({ rules: [{ steps: [{ text: 'all quiet' }] }] }),
})
let outcomeStore
try {
  await openOutcomeStore({ runsDir: 'runs' })
  outcomeStore = { opened: true }
} catch (error) {
  outcomeStore = { code: error.code, missingPackage: error.missingPackage, message: error.message }
}
console.log(JSON.stringify({ disposition: run.disposition, result: run.result, outcomeStore }))
`,
    )
    const output = await run(process.execPath, ['run.mjs'], app, cleanEnv())
    const report = JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>
    expect(report).toMatchObject({ disposition: 'completed', result: { ok: true, facts: { id: 'T-1', status: 'open' }, summary: 'all quiet' } })
    // Without better-sqlite3 the SQLite outcome store says what to install.
    expect(report['outcomeStore']).toMatchObject({ code: 'OUTCOME_STORE_FAILURE', missingPackage: 'better-sqlite3' })
    expect((report['outcomeStore'] as { message: string }).message).toContain('npm install better-sqlite3')
  }, 180_000)
})
