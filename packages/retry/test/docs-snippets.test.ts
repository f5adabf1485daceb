// Every TypeScript snippet in the README and the retries guide that imports
// @locus/retry really runs, and where a ```text block follows it, prints
// exactly that.
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const packageDir = fileURLToPath(new URL('..', import.meta.url))
const sourceEntry = pathToFileURL(join(packageDir, 'src', 'index.ts')).href
const documents = ['README.md', '../../docs/retries.md']

interface Snippet {
  readonly document: string
  readonly line: number
  readonly code: string
  readonly expected: string | undefined
}

function extractSnippets(document: string, text: string): Snippet[] {
  const blocks = [...text.matchAll(/^```(\w*)[^\n]*\n([\s\S]*?)^```\s*$/gm)]
  const snippets: Snippet[] = []
  blocks.forEach((block, index) => {
    const [, language, code = ''] = block
    if (language !== 'ts' || !code.includes("from '@locus/retry'")) return
    const next = blocks[index + 1]
    const between = next === undefined ? '' : text.slice(block.index + block[0].length, next.index)
    const expected = next?.[1] === 'text' && between.trim() === '' ? next[2] : undefined
    snippets.push({ document, line: text.slice(0, block.index).split('\n').length, code, expected })
  })
  return snippets
}

let workDir = ''
beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'locus-retry-docs-'))
})
afterAll(async () => {
  await rm(workDir, { recursive: true, force: true })
})

const snippets = (
  await Promise.all(documents.map(async (document) => extractSnippets(document, await readFile(join(packageDir, document), 'utf8'))))
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
