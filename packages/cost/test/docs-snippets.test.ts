// Every TypeScript snippet in the README that imports @locus/cost really runs, and where a ```text block follows it, prints
// exactly that.
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { type DocsSnippet, extractSnippets } from '@locus/vitest-config/docs-snippets'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const packageDir = fileURLToPath(new URL('..', import.meta.url))
const sourceEntry = pathToFileURL(join(packageDir, 'src', 'index.ts')).href
const documents = ['README.md']

function findSnippets(document: string, text: string): DocsSnippet[] {
  return extractSnippets(document, text, { select: (code) => code.includes("from '@locus/cost'") })
}

let workDir = ''
beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'locus-cost-docs-'))
})
afterAll(async () => {
  await rm(workDir, { recursive: true, force: true })
})

const snippets = (
  await Promise.all(documents.map(async (document) => findSnippets(document, await readFile(join(packageDir, document), 'utf8'))))
).flat()

describe('documentation snippets', () => {
  it('finds the README example', () => {
    expect(snippets.length).toBeGreaterThanOrEqual(1)
    expect(snippets.every((snippet) => snippet.expected !== undefined)).toBe(true)
  })

  it.each(snippets.map((snippet) => [`${snippet.document}:${snippet.line}`, snippet] as const))('%s runs', async (_name, snippet) => {
    const file = join(workDir, `snippet-${snippet.line}-${snippets.indexOf(snippet)}.mts`)
    await writeFile(file, snippet.code.replaceAll("from '@locus/cost'", `from '${sourceEntry}'`))
    const { stdout } = await run(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', file], { cwd: packageDir, timeout: 15_000 })
    if (snippet.expected !== undefined) expect(stdout).toBe(snippet.expected)
  })
})
