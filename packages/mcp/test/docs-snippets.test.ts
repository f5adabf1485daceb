// The README's snippet runs against the source and prints what the README says.
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { extractSnippets } from '@locus/vitest-config/docs-snippets'
import { expect, it } from 'vitest'

const run = promisify(execFile)
const packageDir = fileURLToPath(new URL('..', import.meta.url))
const sourceEntry = pathToFileURL(join(packageDir, 'src', 'index.ts')).href
// The guide's snippets need a workflow module or a server from npm; the README's runs as written.
const documents = ['README.md']
const snippets = (
  await Promise.all(
    documents.map(async (document) =>
      extractSnippets(document, await readFile(join(packageDir, document), 'utf8'), { select: (code) => code.includes("from '@locus/mcp'"), maxLinesBetween: 3 }),
    ),
  )
).flat()

it('finds the README snippet', () => {
  for (const document of documents) expect(snippets.some((snippet) => snippet.document === document)).toBe(true)
})

it.each(snippets.map((snippet) => [`${snippet.document}:${snippet.line}`, snippet] as const))('%s runs and prints what it says', async (_name, snippet) => {
  // Inside the package, so the snippet's other imports resolve from its node_modules.
  const dir = await mkdtemp(join(packageDir, '.snippet-'))
  try {
    const file = join(dir, 'snippet.mts')
    await writeFile(file, snippet.code.replaceAll("from '@locus/mcp'", `from '${sourceEntry}'`))
    const { stdout } = await run(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', file], { cwd: packageDir, timeout: 15_000 })
    expect(stdout).toBe(snippet.expected)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
