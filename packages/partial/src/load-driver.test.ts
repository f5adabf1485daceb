import { spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { type OutcomeStoreDriver, loadDriver } from './load-driver.js'
import { OutcomeStoreError } from './partial-error.js'

const packageDir = fileURLToPath(new URL('..', import.meta.url))

/** A require that finds nothing, failing the way Node's does. */
const notInstalled = (id: OutcomeStoreDriver): never => {
  throw Object.assign(new Error(`Cannot find module '${id}'\nRequire stack:\n- /app/node_modules/@locus/partial/dist/sqlite.js`), { code: 'MODULE_NOT_FOUND' })
}

function caught(body: () => unknown): unknown {
  try {
    body()
  } catch (error) {
    return error
  }
  throw new Error('expected a throw')
}

describe('loadDriver', () => {
  it('names better-sqlite3 and the command that installs it when the SQLite driver is missing', () => {
    const error = caught(() => loadDriver('sqlite', 'better-sqlite3', notInstalled))
    expect(OutcomeStoreError.isInstance(error)).toBe(true)
    const failure = error as OutcomeStoreError
    expect(failure.message).toMatch(/^The SQLite outcome store needs the better-sqlite3 package, which is not installed/)
    expect(failure.message).toContain('npm install better-sqlite3')
    expect(failure.message).not.toContain('Require stack')
    expect(failure).toMatchObject({ store: 'sqlite', operation: 'open', missingPackage: 'better-sqlite3', code: 'OUTCOME_STORE_FAILURE' })
  })

  it('names pg when the PostgreSQL driver is missing', () => {
    const failure = caught(() => loadDriver('postgres', 'pg', notInstalled)) as OutcomeStoreError
    expect(failure.message).toMatch(/^The PostgreSQL outcome store needs the pg package/)
    expect(failure.message).toContain('npm install pg')
    expect(failure.missingPackage).toBe('pg')
  })

  it('does not blame the driver for a module the driver itself could not find', () => {
    const brokenInstall = (): never => {
      throw Object.assign(new Error("Cannot find module 'bindings'"), { code: 'MODULE_NOT_FOUND' })
    }
    const failure = caught(() => loadDriver('sqlite', 'better-sqlite3', brokenInstall)) as OutcomeStoreError
    expect(OutcomeStoreError.isInstance(failure)).toBe(true)
    expect(failure.missingPackage).toBeUndefined()
    expect(failure.message).toContain("failed in open(): Cannot find module 'bindings'")
  })

  it('returns the driver when it is installed', () => {
    const pg = loadDriver('postgres', 'pg') as { Pool: unknown }
    expect(typeof pg.Pool).toBe('function')
  })
})

describe('opening a store without its driver', () => {
  const dirs: string[] = []
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
  })

  it('openOutcomeStore says which package to install, in a process where better-sqlite3 cannot be resolved', async () => {
    const runsDir = await mkdtemp(join(tmpdir(), 'locus-no-driver-'))
    dirs.push(runsDir)
    // Hides better-sqlite3 from require() the way an install without it would.
    const hide = join(runsDir, 'hide-better-sqlite3.cjs')
    await writeFile(
      hide,
      `
      const Module = require('node:module')
      const resolve = Module._resolveFilename
      Module._resolveFilename = function (request, ...rest) {
        if (request === 'better-sqlite3') throw Object.assign(new Error("Cannot find module 'better-sqlite3'"), { code: 'MODULE_NOT_FOUND' })
        return resolve.call(this, request, ...rest)
      }
    `,
    )
    const probe = `
      const { openOutcomeStore } = await import('@locus/partial')
      try {
        await openOutcomeStore({ runsDir: ${JSON.stringify(runsDir)} })
        console.log(JSON.stringify({ opened: true }))
      } catch (error) {
        console.log(JSON.stringify({ message: error.message, code: error.code, missingPackage: error.missingPackage }))
      }
    `
    const child = spawnSync(
      process.execPath,
      ['--require', hide, '--conditions=@locus/source', '--import', 'tsx', '--input-type=module', '-e', probe],
      { cwd: packageDir, encoding: 'utf8' },
    )
    expect(child.status, child.stderr).toBe(0)
    const outcome = JSON.parse(child.stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>
    expect(outcome).toMatchObject({ code: 'OUTCOME_STORE_FAILURE', missingPackage: 'better-sqlite3' })
    expect(outcome['message']).toContain('The SQLite outcome store needs the better-sqlite3 package')
    expect(outcome['message']).toContain('npm install better-sqlite3')
  })
})
