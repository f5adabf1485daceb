// The official MCP conformance suite's `dns-rebinding-protection` scenario
// against `/mcp` of a real server. The suite needs Node 22 or later, so the
// test installs Node 22 (the npm registry's `node` package) and the suite
// into a scratch folder with npm, and runs the suite on that Node. It needs
// the npm registry: it runs in CI (CI=true) or with LOCUS_MCP_CONFORMANCE=1.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testServer } from './helpers.js'

const ENABLED = process.env.CI === 'true' || process.env.LOCUS_MCP_CONFORMANCE === '1'

describe.skipIf(!ENABLED)('MCP conformance suite: dns-rebinding-protection against /mcp', () => {
  let scratch = ''
  let node = ''
  let suite = ''

  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'locus-mcp-conformance-'))
    const install = spawnSync('npm', ['install', '--prefix', scratch, '--no-audit', '--no-fund', '--loglevel=error', 'node@22', '@modelcontextprotocol/conformance'], {
      encoding: 'utf8',
      timeout: 280_000,
    })
    if (install.status !== 0) throw new Error(`npm could not install Node 22 and the conformance suite into ${scratch}: ${install.stderr || String(install.error)}`)
    node = join(scratch, 'node_modules', '.bin', 'node')
    const manifest = JSON.parse(readFileSync(join(scratch, 'node_modules', '@modelcontextprotocol', 'conformance', 'package.json'), 'utf8')) as { bin: string | Record<string, string> }
    const bin = typeof manifest.bin === 'string' ? manifest.bin : (Object.values(manifest.bin)[0] ?? '')
    suite = join(scratch, 'node_modules', '@modelcontextprotocol', 'conformance', bin)
    expect(existsSync(node), node).toBe(true)
    const version = spawnSync(node, ['--version'], { encoding: 'utf8' })
    expect(version.stdout).toMatch(/^v22\./)
  }, 300_000)

  afterAll(() => {
    if (scratch !== '') rmSync(scratch, { recursive: true, force: true })
  }, 120_000)

  it('passes: evil.example.com is refused with 403 and the loopback Host is served', async () => {
    const server = await testServer()
    const result = await new Promise<{ status: number | null; output: string }>((resolve) => {
      // Asynchronous: the server under test answers in this process meanwhile.
      import('node:child_process').then(({ spawn }) => {
        const child = spawn(node, [suite, 'server', '--url', `${server.url}/mcp`, '--scenario', 'dns-rebinding-protection'], { cwd: scratch })
        let output = ''
        child.stdout.on('data', (chunk: Buffer) => {
          output += chunk.toString()
        })
        child.stderr.on('data', (chunk: Buffer) => {
          output += chunk.toString()
        })
        child.on('close', (status) => {
          resolve({ status, output })
        })
      }, () => {
        resolve({ status: null, output: 'could not spawn' })
      })
    })
    // The suite exits 1 when a check fails, and prints each check with its verdict.
    expect(result.status, result.output).toBe(0)
    const plain = result.output.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '')
    expect(plain).toMatch(/\[localhost-host-rebinding-rejected\s*\] SUCCESS/)
    expect(plain).toMatch(/\[localhost-host-valid-accepted\s*\] SUCCESS/)
    expect(plain).toMatch(/Passed: 2\/2/)
  }, 120_000)
})
