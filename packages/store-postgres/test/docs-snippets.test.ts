// The README's snippet runs against the source and a real PostgreSQL, and prints what the README says.
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { extractSnippets } from '@locus/vitest-config/docs-snippets'
import pg from 'pg'
import { expect, it } from 'vitest'

const url = process.env.LOCUS_TEST_PG_URL === '' ? undefined : process.env.LOCUS_TEST_PG_URL
const run = promisify(execFile)
const packageDir = fileURLToPath(new URL('..', import.meta.url))
const sourceEntry = pathToFileURL(join(packageDir, 'src', 'index.ts')).href
const snippets = extractSnippets('README.md', await readFile(join(packageDir, 'README.md'), 'utf8'), {
  select: (code) => code.includes("from '@locus/store-postgres'"),
})

it('finds the README snippet', () => {
  expect(snippets).toHaveLength(1)
})

it.skipIf(url === undefined && (process.env.CI ?? '') === '').each(snippets.map((snippet) => [`README.md:${snippet.line}`, snippet] as const))(
  '%s runs against PostgreSQL and prints what it says',
  async (_name, snippet) => {
    if (url === undefined) throw new Error('LOCUS_TEST_PG_URL is not set, but CI is: start PostgreSQL (scripts/ci-services.sh start).')
    const dir = await mkdtemp(join(tmpdir(), 'locus-store-pg-docs-'))
    const schema = `locus_docs_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    try {
      const file = join(dir, 'snippet.mts')
      await writeFile(file, snippet.code.replaceAll("from '@locus/store-postgres'", `from '${sourceEntry}'`))
      const { stdout } = await run(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', file], {
        cwd: packageDir,
        timeout: 20_000,
        env: { ...process.env, DATABASE_URL: url, LOCUS_SCHEMA: schema },
      })
      expect(stdout).toBe(snippet.expected)
    } finally {
      await rm(dir, { recursive: true, force: true })
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      await client.query(`drop schema if exists "${schema}" cascade`)
      await client.end()
    }
  },
)
