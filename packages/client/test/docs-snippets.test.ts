// The snippets of the README and the server guide run against the source and print what they say.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRuntime, createScriptedHost, defineWorkflow } from '@locus/runtime'
import { extractSnippets, runSnippet } from '@locus/vitest-config/docs-snippets'
import { expect, it } from 'vitest'
import { z } from 'zod'
import { KEY, tempRunsDir, testServer } from './helpers.js'

const packageDir = fileURLToPath(new URL('..', import.meta.url))
const documents = ['README.md', '../../docs/server.md']
const snippets = (
  await Promise.all(
    documents.map(async (document) =>
      extractSnippets(document, await readFile(join(packageDir, document), 'utf8'), { select: (code) => code.includes("from '@locus/client'"), maxLinesBetween: 3 }),
    ),
  )
).flat()

/** The `triage` workflow of docs/server.md's example server, on a scripted host that answers P2. */
const triage = defineWorkflow({
  name: 'triage',
  input: z.object({ ticket: z.string().regex(/^T-\d+$/) }),
  async run({ input, agent }) {
    const { answer } = await agent(`Give ticket ${input.ticket} a priority: P1, P2 or P3.`)
    return { ok: true, ticket: input.ticket, priority: answer }
  },
})

it('finds the snippets of the README and the server guide, each with its output', () => {
  for (const document of documents) expect(snippets.filter((snippet) => snippet.document === document && snippet.expected !== undefined)).toHaveLength(1)
})

it.each(snippets.map((snippet) => [`${snippet.document}:${snippet.line}`, snippet] as const))('%s runs and prints what it says', async (_name, snippet) => {
  // The server guide's snippet talks to a running server at $LOCUS_URL; the README's starts its own.
  const runtime = createRuntime({ workflows: [triage], host: createScriptedHost({ rules: [{ steps: [{ text: 'P2' }] }] }), runsDir: tempRunsDir() })
  const server = await testServer({ runtime })
  const stdout = await runSnippet(snippet, {
    packageDir,
    packageName: '@locus/client',
    sourceEntry: join(packageDir, 'src', 'index.ts'),
    env: { LOCUS_URL: server.url, LOCUS_KEY: KEY },
  })
  expect(stdout).toBe(snippet.expected)
})
