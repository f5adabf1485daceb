// docs/deferred-tools.md's snippet runs and prints what the guide says.
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
const snippets = extractSnippets('docs/deferred-tools.md', await readFile(join(packageDir, '../../docs/deferred-tools.md'), 'utf8'), {
  select: (code) => code.includes("from '@locus/runtime'"),
})

it.each(snippets.map((snippet) => [`docs/deferred-tools.md:${snippet.line}`, snippet] as const))('%s runs and prints what it says', async (_name, snippet) => {
  const dir = await mkdtemp(join(packageDir, '.snippet-'))
  try {
    const file = join(dir, 'snippet.mts')
    await writeFile(file, snippet.code.replaceAll("from '@locus/runtime'", `from '${sourceEntry}'`))
    const { stdout } = await run(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', file], { cwd: packageDir, timeout: 15_000 })
    expect(stdout).toBe(snippet.expected)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
