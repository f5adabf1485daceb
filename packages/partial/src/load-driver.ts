import { createRequire } from 'node:module'
import { OutcomeStoreError, type OutcomeStoreKind } from './partial-error.js'

/** The database drivers the outcome stores use: optional peer dependencies of this package. */
export type OutcomeStoreDriver = 'better-sqlite3' | 'pg'

/** How a driver is loaded: `require` from this package's place in node_modules, or a stand-in in tests. */
export type DriverRequire = (id: OutcomeStoreDriver) => unknown

// Created on first use, so importing this package resolves nothing.
let defaultRequire: DriverRequire | undefined

/**
 * Loads a store's database driver when that store is opened, never when the
 * package is imported: `@locus/runtime` depends on this package and must not
 * pull in a native module or a database client. Both drivers are CommonJS,
 * so a synchronous `require` keeps the `create…OutcomeStore` functions
 * synchronous.
 *
 * A driver that is not installed is an {@link OutcomeStoreError} (operation
 * `open`) whose message names the package and the command that installs it.
 */
export function loadDriver(store: OutcomeStoreKind, driver: OutcomeStoreDriver, load?: DriverRequire): unknown {
  const requireDriver = load ?? (defaultRequire ??= createRequire(import.meta.url) as DriverRequire)
  try {
    return requireDriver(driver)
  } catch (error) {
    if (isMissing(error, driver)) throw new OutcomeStoreError(store, 'open', error, driver)
    throw new OutcomeStoreError(store, 'open', error)
  }
}

/** True when `error` says `driver` itself cannot be found (not a module it requires in turn). */
function isMissing(error: unknown, driver: OutcomeStoreDriver): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { code, message } = error as { code?: unknown; message?: unknown }
  if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') return false
  // "Cannot find module 'pg'" (require) or "Cannot find package 'pg'" (import).
  return typeof message === 'string' && new RegExp(`Cannot find (module|package) '${driver}'`).test(message)
}
