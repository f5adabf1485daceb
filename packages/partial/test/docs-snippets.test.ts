// Every ```ts block in the README and in docs/partial-answers.md is a complete
// program; this runs each one as it is (imports pointed at the sources) so the
// documentation cannot drift from the code.
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const packageDir = fileURLToPath(new URL('..', import.meta.url))
const sources: Record<string, string> = {
  '@locus/partial': pathToFileURL(join(packageDir, 'src/index.ts')).href,
  '@locus/outcome': pathToFileURL(join(packageDir, 'node_modules/@locus/outcome/src/index.ts')).href,
}

function snippets(file: string): [string, string][] {
  const text = readFileSync(join(packageDir, file), 'utf8')
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((match, index) => [`${file} block ${index + 1}`, match[1] ?? ''])
}

const directory = mkdtempSync(join(tmpdir(), 'locus-partial-docs-'))
afterAll(() => {
  rmSync(directory, { recursive: true, force: true })
})

describe('documentation snippets run', () => {
  const blocks = [...snippets('README.md'), ...snippets('../../docs/partial-answers.md')]

  it('finds the snippets', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(8)
  })

  it.each(blocks)('%s', async (name, code) => {
    const program = code.replace(/from '(@locus\/(?:partial|outcome))'/g, (_match, specifier: string) => `from '${sources[specifier] ?? specifier}'`)
    const file = join(directory, `${name.replace(/[^a-z0-9]+/gi, '-')}.mts`)
    writeFileSync(file, program)
    const environment = { ...process.env }
    delete environment.LOCUS_DATABASE_URL
    const { stdout } = await run(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', file], { cwd: packageDir, env: environment })
    expect(stdout.length).toBeGreaterThan(0)
  })
})
