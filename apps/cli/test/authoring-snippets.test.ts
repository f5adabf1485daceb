// Every TypeScript snippet of docs/authoring.md runs through `locus run` from a
// directory with no node_modules: a workflow author gets every name the guide
// imports from what `locus run` lends, and the output the guide shows.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { extractSnippets } from '@locus/vitest-config/docs-snippets'
import { afterAll, describe, expect, it } from 'vitest'
import { repoRoot, runLocus } from './helpers.js'

const guide = 'docs/authoring.md'
const snippets = extractSnippets(guide, readFileSync(join(repoRoot, guide), 'utf8'))
const workDir = mkdtempSync(join(tmpdir(), 'locus-authoring-'))
afterAll(() => {
  rmSync(workDir, { recursive: true, force: true })
})

/**
 * The snippet as a workflow module `locus run` loads. A whole module runs its
 * own top-level code on import and gets a trivial default export if it has
 * none; a fragment (no imports) is the body of a workflow's `run`.
 */
function asWorkflowModule(code: string): string {
  if (!/^import /m.test(code)) return `export default async ({ agent, tool, log }) => {\n${code}\nreturn { ok: true }\n}\n`
  return /^export default /m.test(code) || /^export const workflow /m.test(code) ? code : `${code}\nexport default async () => ({ ok: true })\n`
}

describe(`every snippet of ${guide} runs through locus run`, () => {
  it('finds the snippets, an import of @locus/retry among none of them', () => {
    expect(snippets.length).toBeGreaterThanOrEqual(5)
    for (const snippet of snippets) expect({ line: snippet.line, importsRetry: snippet.code.includes("'@locus/retry'") }).toEqual({ line: snippet.line, importsRetry: false })
  })

  it.each(snippets.map((snippet) => [`${guide}:${snippet.line}`, snippet] as const))('%s', async (_name, snippet) => {
    const file = join(workDir, `snippet-${snippet.line}.mts`)
    writeFileSync(file, asWorkflowModule(snippet.code))
    writeFileSync(join(workDir, `snippet-${snippet.line}.fixtures.json`), JSON.stringify({ rules: [{ steps: [{ text: 'Two outages, both resolved.' }] }] }))
    const result = await runLocus(['run', file, '--host', 'scripted', '--quiet', '--runs-dir', join(workDir, 'runs')], { cwd: workDir })
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' })
    if (snippet.expected !== undefined) expect(result.stdout).toContain(snippet.expected)
  }, 60_000)
})
