// The README's snippet and the MCP guide's in-process round trip run against the source and print what they say
// (the guide's other snippets need a workflow module or a server from npm).
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { extractSnippets, runSnippet } from '@locus/vitest-config/docs-snippets'
import { expect, it } from 'vitest'

const packageDir = fileURLToPath(new URL('..', import.meta.url))
const documents = ['README.md', '../../docs/mcp.md']
const snippets = (
  await Promise.all(
    documents.map(async (document) =>
      extractSnippets(document, await readFile(join(packageDir, document), 'utf8'), { select: (code) => code.includes("from '@locus/mcp'") && (document === 'README.md' || code.includes('InMemoryTransport')), maxLinesBetween: 3 }),
    ),
  )
).flat()

it('finds the snippets of the README and the MCP guide', () => {
  for (const document of documents) expect(snippets.some((snippet) => snippet.document === document)).toBe(true)
})

it.each(snippets.map((snippet) => [`${snippet.document}:${snippet.line}`, snippet] as const))('%s runs and prints what it says', async (_name, snippet) => {
  const stdout = await runSnippet(snippet, { packageDir, packageName: '@locus/mcp', sourceEntry: join(packageDir, 'src', 'index.ts') })
  if (snippet.expected !== undefined) expect(stdout).toBe(snippet.expected)
})
