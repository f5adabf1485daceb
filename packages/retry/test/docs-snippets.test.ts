// Every TypeScript snippet in the README and the retries guide that imports
// @locus/retry really runs, and where a ```text block follows it, prints
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
const documents = ['README.md', '../../docs/retries.md']

function findSnippets(document: string, text: string): DocsSnippet[] {
  return extractSnippets(document, text, { select: (code) => code.includes("from '@locus/retry'") })
}

let workDir = ''
beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'locus-retry-docs-'))
})
afterAll(async () => {
  await rm(workDir, { recursive: true, force: true })
})

const snippets = (
  await Promise.all(documents.map(async (document) => findSnippets(document, await readFile(join(packageDir, document), 'utf8'))))
).flat()

describe('documentation snippets', () => {
  it('finds the snippets, including the seed worked example', () => {
    expect(snippets.length).toBeGreaterThanOrEqual(4)
    expect(snippets.some((snippet) => snippet.code.includes('render_report'))).toBe(true)
  })

  it.each(snippets.map((snippet) => [`${snippet.document}:${snippet.line}`, snippet] as const))('%s runs', async (_name, snippet) => {
    const file = join(workDir, `snippet-${snippet.line}-${snippets.indexOf(snippet)}.mts`)
    await writeFile(file, snippet.code.replaceAll("from '@locus/retry'", `from '${sourceEntry}'`))
    const { stdout } = await run(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', file], { cwd: packageDir, timeout: 15_000 })
    if (snippet.expected !== undefined) expect(stdout).toBe(snippet.expected)
  })
})
