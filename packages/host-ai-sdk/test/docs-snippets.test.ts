// Every TypeScript snippet in the README and the models guide that imports
// @locus/host-ai-sdk really runs, in a child process, against the loopback
// test server (LOCUS_MODEL_BASE_URL points at it); where a ```text block
// follows a snippet, its output must be exactly that.
import { execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { type DocsSnippet, extractSnippets } from '@locus/vitest-config/docs-snippets'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type OpenAiCompatibleTestServer, createOpenAiCompatibleTestServer } from './openai-compatible-server.js'

const run = promisify(execFile)
const packageDir = fileURLToPath(new URL('..', import.meta.url))
const sourceEntry = pathToFileURL(join(packageDir, 'src', 'index.ts')).href
const documents = ['README.md', '../../docs/models.md']
// The runs go to a temp cwd, so tsx is named by its absolute location rather than resolved from there.
const tsxLoader = pathToFileURL(join(createRequire(join(packageDir, 'package.json')).resolve('tsx/package.json'), '..', 'dist', 'loader.mjs')).href

function findSnippets(document: string, text: string): DocsSnippet[] {
  return extractSnippets(document, text, { select: (code) => code.includes("from '@locus/host-ai-sdk'"), maxLinesBetween: 2 })
}

let server: OpenAiCompatibleTestServer
// Snippets are written inside the package so that their bare imports (@locus/runtime, zod) resolve; runs go to a temp cwd.
let snippetDir = ''
let runDir = ''
beforeAll(async () => {
  server = await createOpenAiCompatibleTestServer({ fallback: { kind: 'text', text: 'ok' } })
  snippetDir = await mkdtemp(join(packageDir, '.docs-snippets-'))
  runDir = await mkdtemp(join(tmpdir(), 'locus-host-ai-sdk-docs-'))
})
afterAll(async () => {
  await server.close()
  await rm(snippetDir, { recursive: true, force: true })
  await rm(runDir, { recursive: true, force: true })
})

const snippets = (
  await Promise.all(documents.map(async (document) => findSnippets(document, await readFile(join(packageDir, document), 'utf8'))))
).flat()

describe('documentation snippets', () => {
  it('finds the snippets: the README example and the guide\'s connection, roles and retry examples', () => {
    expect(snippets.length).toBeGreaterThanOrEqual(4)
    expect(snippets.some((snippet) => snippet.code.includes('onLlmAttempt'))).toBe(true)
  })

  it.each(snippets.map((snippet) => [`${snippet.document}:${snippet.line}`, snippet] as const))('%s runs against the test server', async (_name, snippet) => {
    // The retry example is shown against a server that is overloaded once.
    if (snippet.code.includes('onLlmAttempt')) server.enqueue({ kind: 'status', status: 503, message: 'overloaded' })
    const before = server.requests.length
    const file = join(snippetDir, `snippet-${snippets.indexOf(snippet)}.mts`)
    await writeFile(file, snippet.code.replaceAll("from '@locus/host-ai-sdk'", `from '${sourceEntry}'`))
    const { stdout } = await run(process.execPath, ['--conditions=@locus/source', '--import', tsxLoader, file], {
      cwd: runDir,
      timeout: 30_000,
      env: { ...process.env, LOCUS_MODEL_BASE_URL: server.baseURL, LOCUS_MODEL: 'test-model', LOCUS_API_KEY: 'test-key' },
    })
    if (snippet.expected !== undefined) expect(stdout).toBe(snippet.expected)
    if (snippet.code.includes('runWorkflowScript')) expect(server.requests.length).toBeGreaterThan(before)
  })
})
