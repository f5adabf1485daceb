import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const packageDir = fileURLToPath(new URL('..', import.meta.url))

/**
 * Imports a module in a fresh Node process (then runs `then`, if given, with
 * the module as `imported`) and lists which database drivers got loaded:
 * CommonJS packages that came in (pg, better-sqlite3) and native shared
 * objects that were opened (better_sqlite3.node).
 */
function driversLoadedBy(specifier: string, then = ''): string[] {
  const probe = `
    import { createRequire } from 'node:module'
    const imported = await import(${JSON.stringify(specifier)})
    ${then}
    const cached = Object.keys(createRequire(import.meta.url).cache)
    const loaded = []
    if (cached.some((path) => /[\\\\/]node_modules[\\\\/]pg[\\\\/]/.test(path))) loaded.push('pg')
    if (cached.some((path) => /[\\\\/]node_modules[\\\\/]better-sqlite3[\\\\/]/.test(path))) loaded.push('better-sqlite3')
    const shared = process.report.getReport().sharedObjects
    if (shared.some((path) => path.endsWith('.node'))) loaded.push('native addon')
    console.log(JSON.stringify(loaded))
  `
  const child = spawnSync(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', '--input-type=module', '-e', probe], { cwd: packageDir, encoding: 'utf8' })
  if (child.status !== 0) throw new Error(`probe failed: ${child.stderr}`)
  return JSON.parse(child.stdout.trim().split('\n').at(-1) ?? '[]') as string[]
}

describe('importing the runtime', () => {
  it('loads no database driver and no native module', () => {
    expect(driversLoadedBy('@locus/runtime')).toEqual([])
  })

  it('loads no driver for the outcome store subpaths until a store is created', () => {
    // The drivers are optional peer dependencies: an app that imports a subpath but never opens that store needs none.
    expect(driversLoadedBy('@locus/partial/sqlite')).toEqual([])
    expect(driversLoadedBy('@locus/partial/postgres')).toEqual([])
  })

  it('the probe sees a driver when one is loaded (so the checks above can fail)', () => {
    expect(driversLoadedBy('@locus/partial/sqlite', `imported.createSqliteOutcomeStore({ path: ':memory:' })`)).toEqual(['better-sqlite3', 'native addon'])
    expect(driversLoadedBy('@locus/partial/postgres', `imported.createPostgresOutcomeStore({ connectionString: 'postgres://localhost/none' })`)).toEqual(['pg'])
  })
})
