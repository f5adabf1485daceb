// The guides run this repository's `locus`, never a package of that name
// from the npm registry: `locus` there is someone else's ("a Line focuser"),
// and `@locus/*` are not published yet, so `npx locus` would download and run
// a stranger's code. Until they are published, a guide uses
// `npm run locus -- ...` from the clone or `node <clone>/apps/cli/dist/cli.js`,
// and names the package that will carry the binary by its scoped name.
import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

function markdownUnder(directory: string): string[] {
  return readdirSync(join(root, directory), { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name)
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : markdownUnder(path)
    return entry.name.endsWith('.md') ? [path] : []
  })
}

const readmes = (directory: string): string[] =>
  readdirSync(join(root, directory), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => join(directory, entry.name, 'README.md'))
    .filter((path) => {
      try {
        readFileSync(join(root, path))
        return true
      } catch {
        return false
      }
    })

const DOCS = ['README.md', ...markdownUnder('docs'), ...readmes('packages'), ...readmes('apps')]

/** `npx locus`, `npx -y locus`, `"command": "npx", "args": ["locus", ...]`, `pnpm dlx locus`, `bunx locus`: a registry package called `locus`. */
const REGISTRY_LOCUS = [/\b(?:npx|bunx|pnpm dlx|yarn dlx)(?:\s+-\S+)*\s+locus\b/, /"command"\s*:\s*"(?:npx|bunx)"\s*,\s*"args"\s*:\s*\[\s*(?:"-[^"]*"\s*,\s*)*"locus"/, /\bnpm (?:i|install)(?:\s+-\S+)*\s+locus\b/]

describe('the guides run this repository’s locus', () => {
  it('covers the README, every guide and every package and app README', () => {
    expect(DOCS).toContain('docs/mcp.md')
    expect(DOCS).toContain('apps/cli/README.md')
    expect(DOCS.length).toBeGreaterThan(20)
  })

  it('no doc tells anyone to run a registry package called locus (npx locus, an npx command with args ["locus", ...])', () => {
    const found = DOCS.flatMap((doc) => {
      const text = readFileSync(join(root, doc), 'utf8')
      return REGISTRY_LOCUS.filter((pattern) => pattern.test(text)).map((pattern) => `${doc}: ${pattern.exec(text)?.[0] ?? ''}`)
    })
    expect(found).toEqual([])
  })

  it('the patterns catch the forms the MCP guide used to give', () => {
    const old = '{ "command": "npx", "args": ["locus", "mcp", "--workflows", "/w"] }'
    expect(REGISTRY_LOCUS.some((pattern) => pattern.test(old))).toBe(true)
    expect(REGISTRY_LOCUS.some((pattern) => pattern.test('run `npx -y locus mcp`'))).toBe(true)
    expect(REGISTRY_LOCUS.some((pattern) => pattern.test('npx tsx server.ts'))).toBe(false)
  })

  it('the MCP guide’s client configuration runs the clone’s built CLI through node and names @locus/cli', () => {
    const guide = readFileSync(join(root, 'docs/mcp.md'), 'utf8')
    const configs = [...guide.matchAll(/```json\n([\s\S]*?)```/g)].map((match) => JSON.parse(match[1] ?? '') as { mcpServers: Record<string, { command?: string; args?: string[] }> })
    const commands = configs.flatMap((config) => Object.values(config.mcpServers)).filter((server) => server.command !== undefined)
    expect(commands.length).toBeGreaterThan(0)
    for (const server of commands) {
      expect(server.command).toBe('node')
      expect(server.args?.[0]).toMatch(/^\/.+\/apps\/cli\/dist\/cli\.js$/)
      expect(server.args?.[1]).toBe('mcp')
    }
    const cliPackage = JSON.parse(readFileSync(join(root, 'apps/cli/package.json'), 'utf8')) as { name: string; bin: Record<string, string> }
    expect(cliPackage.bin.locus).toBe('./dist/cli.js')
    expect(guide).toContain(`\`${cliPackage.name}\``)
  })
})
