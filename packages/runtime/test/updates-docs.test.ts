// docs/updates.md's snippet runs and prints what the guide says.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { extractSnippets, runSnippet } from '@locus/vitest-config/docs-snippets'
import { expect, it } from 'vitest'

const packageDir = fileURLToPath(new URL('..', import.meta.url))
const snippets = extractSnippets('docs/updates.md', await readFile(join(packageDir, 'docs/updates.md'), 'utf8'), {
  select: (code) => code.includes("from '@locus/runtime'"),
})

it('finds the guide’s runnable snippet', () => {
  expect(snippets.length).toBeGreaterThan(0)
})

it.each(snippets.map((snippet) => [`docs/updates.md:${snippet.line}`, snippet] as const))('%s runs and prints what it says', async (_name, snippet) => {
  const stdout = await runSnippet(snippet, { packageDir, packageName: '@locus/runtime', sourceEntry: join(packageDir, 'src', 'index.ts') })
  expect(stdout).toBe(snippet.expected)
})
