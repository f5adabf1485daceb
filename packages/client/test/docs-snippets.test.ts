// The README's snippet runs against the source and prints what it says.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { extractSnippets, runSnippet } from '@locus/vitest-config/docs-snippets'
import { expect, it } from 'vitest'

const packageDir = fileURLToPath(new URL('..', import.meta.url))
const snippets = extractSnippets('README.md', await readFile(join(packageDir, 'README.md'), 'utf8'), {
  select: (code) => code.includes("from '@locus/client'"),
  maxLinesBetween: 3,
})

it('finds the README snippet and its output', () => {
  expect(snippets).toHaveLength(1)
  expect(snippets[0]?.expected).toBeDefined()
})

it.each(snippets.map((snippet) => [`${snippet.document}:${snippet.line}`, snippet] as const))('%s runs and prints what it says', async (_name, snippet) => {
  const stdout = await runSnippet(snippet, { packageDir, packageName: '@locus/client', sourceEntry: join(packageDir, 'src', 'index.ts') })
  expect(stdout).toBe(snippet.expected)
})
