// The README's snippet runs against the source and prints what the README says.
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { extractSnippets } from '@locus/vitest-config/docs-snippets'
import { expect, it } from 'vitest'

const run = promisify(execFile)
const packageDir = fileURLToPath(new URL('..', import.meta.url))
const sourceEntry = pathToFileURL(join(packageDir, 'src', 'index.ts')).href
const snippets = extractSnippets('README.md', await readFile(join(packageDir, 'README.md'), 'utf8'), {
  select: (code) => code.includes("from '@locus/store'"),
})

it('finds the README snippet', () => {
  expect(snippets).toHaveLength(1)
})

it.each(snippets.map((snippet) => [`README.md:${snippet.line}`, snippet] as const))('%s runs and prints what it says', async (_name, snippet) => {
  const dir = await mkdtemp(join(tmpdir(), 'locus-store-docs-'))
  try {
    const file = join(dir, 'snippet.mts')
    await writeFile(file, snippet.code.replaceAll("from '@locus/store'", `from '${sourceEntry}'`))
    const { stdout } = await run(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', file], { cwd: packageDir, timeout: 15_000 })
    expect(stdout).toBe(snippet.expected)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
