import { readFileSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const REPOSITORY = fileURLToPath(new URL('../../..', import.meta.url))

/** Every way a module can reach the file system module: static and type-only imports, re-exports, dynamic import, require. */
const FILE_SYSTEM_IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)['"](?:node:)?fs(?:\/promises)?['"]/m

function filesUnder(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name)
    if (entry.isDirectory()) return filesUnder(path)
    return /\.(?:[cm]?ts|[cm]?js|tsx)$/.test(entry.name) ? [path] : []
  })
}

/** The files of a folder that import the file system, relative to the repository. */
function fileSystemImporters(folder: string): string[] {
  return filesUnder(join(REPOSITORY, folder))
    .filter((path) => FILE_SYSTEM_IMPORT.test(readFileSync(path, 'utf8')))
    .map((path) => relative(REPOSITORY, path))
}

describe('one persistence path: the runtime and replay reach runs only through a RunStore', () => {
  it('finds no import of node:fs or node:fs/promises in any file under packages/runtime/src or packages/replay/src', () => {
    const runtimeFiles = filesUnder(join(REPOSITORY, 'packages/runtime/src'))
    const replayFiles = filesUnder(join(REPOSITORY, 'packages/replay/src'))
    // The scan looked at the packages, not at an empty folder.
    expect(runtimeFiles.length).toBeGreaterThan(20)
    expect(replayFiles.length).toBeGreaterThan(10)
    expect([...fileSystemImporters('packages/runtime/src'), ...fileSystemImporters('packages/replay/src')]).toEqual([])
  })

  it('recognises every form of such an import, and not a mention in prose', () => {
    const importing = [
      "import { readFileSync } from 'node:fs'",
      'import { readFile } from "node:fs/promises"',
      "import type { Stats } from 'fs'",
      "export { existsSync } from 'fs/promises'",
      "const fs = await import('node:fs')",
      "const fs = require('fs')",
      "import 'node:fs'",
    ]
    for (const text of importing) expect(FILE_SYSTEM_IMPORT.test(text), text).toBe(true)
    const harmless = ["// the file store uses 'node:fs'; this module does not", "import { join } from 'node:path'", "const note = 'fs'"]
    for (const text of harmless) expect(FILE_SYSTEM_IMPORT.test(text), text).toBe(false)
  })
})
