// The README's snippet runs against the source and prints what the README says.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { extractSnippets, runSnippet } from '@locus/vitest-config/docs-snippets'
import { expect, it } from 'vitest'

const packageDir = fileURLToPath(new URL('..', import.meta.url))
const documents = ['README.md']
const snippets = (
  await Promise.all(
    documents.map(async (document) =>
      extractSnippets(document, await readFile(join(packageDir, document), 'utf8'), { select: (code) => code.includes("from '@locus/journal'"), maxLinesBetween: 3 }),
    ),
  )
).flat()

it('finds the snippets of the README', () => {
  for (const document of documents) expect(snippets.some((snippet) => snippet.document === document)).toBe(true)
})

it.each(snippets.map((snippet) => [`${snippet.document}:${snippet.line}`, snippet] as const))('%s runs and prints what it says', async (_name, snippet) => {
  const stdout = await runSnippet(snippet, { packageDir, packageName: '@locus/journal', sourceEntry: join(packageDir, 'src', 'index.ts') })
  if (snippet.expected !== undefined) expect(stdout).toBe(snippet.expected)
})
