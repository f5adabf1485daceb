// Every TypeScript snippet of this README that imports @locus/testing
// really runs; where a ```text block follows one, it prints exactly that.
import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { type DocsSnippet, extractSnippets } from '@locus/vitest-config/docs-snippets'
import { afterAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const packageDir = fileURLToPath(new URL('..', import.meta.url))
// Inside the package, so that '@locus/testing', '@locus/runtime' and 'zod' resolve as they do for a user.
const workDir = join(packageDir, '.docs-snippets')
const documents = ['README.md']

function findSnippets(document: string, text: string): DocsSnippet[] {
  return extractSnippets(document, text, { select: (code) => code.includes("from '@locus/testing'") })
}

const snippets = documents.flatMap((document) => findSnippets(document, readFileSync(join(packageDir, document), 'utf8')))
mkdirSync(workDir, { recursive: true })
afterAll(() => {
  rmSync(workDir, { recursive: true, force: true })
})

describe('documentation snippets', () => {
  it('finds a runnable snippet with its output in the README', () => {
    for (const document of documents) expect(snippets.some((snippet) => snippet.document === document && snippet.expected !== undefined)).toBe(true)
  })

  it.each(snippets.map((snippet) => [`${snippet.document}:${snippet.line}`, snippet] as const))('%s runs', async (_name, snippet) => {
    const file = join(workDir, `snippet-${snippets.indexOf(snippet)}.mts`)
    writeFileSync(file, snippet.code)
    const { stdout } = await run(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', file], { cwd: packageDir, timeout: 30_000 })
    if (snippet.expected !== undefined) expect(stdout).toBe(snippet.expected)
  })
})
