// `locus serve --allow-origin` and `--allow-host`, through the built CLI: the
// names reach the server, and a value that is not an origin or a host name
// is a usage error (exit 2) that names it.
import { request as httpRequest } from 'node:http'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { repoRoot, runLocus, settle, startLocus, tempDir } from './helpers.js'

const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')

async function workflowsDir(): Promise<string> {
  const dir = await tempDir()
  await writeFile(join(dir, 'hello.mts'), [`import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`, "export default defineWorkflow({ name: 'hello', run: () => ({ ok: true }) })"].join('\n'))
  return dir
}

function statusWithHost(url: string, host: string, headers: Record<string, string> = {}): Promise<{ status: number; allowOrigin: string | undefined }> {
  const target = new URL(url)
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest({ host: target.hostname, port: target.port, path: '/v1/runs', headers: { host, ...headers } }, (incoming) => {
      incoming.resume()
      const allowOrigin = incoming.headers['access-control-allow-origin']
      resolve({ status: incoming.statusCode ?? 0, allowOrigin: typeof allowOrigin === 'string' ? allowOrigin : undefined })
    })
    outgoing.on('error', reject)
    outgoing.end()
  })
}

describe('locus serve --allow-origin and --allow-host', () => {
  it('answers the allowed host names and origins, and refuses others', async () => {
    const dir = await workflowsDir()
    const child = startLocus(['serve', '--workflows', dir, '--port', '0', '--runs-dir', join(dir, 'runs'), '--allow-host', 'locus.test', '--allow-origin', 'http://app.test:5173'], { cwd: dir })
    const url = await new Promise<string>((resolve, reject) => {
      let out = ''
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        const match = /at (http:\/\/[^ ]+)/.exec(out)
        if (match !== null) resolve(match[1] ?? '')
      })
      child.on('exit', () => {
        reject(new Error(`locus serve exited early: ${out}`))
      })
    })
    const ended = settle(child)
    expect((await statusWithHost(url, 'locus.test')).status).toBe(200)
    expect((await statusWithHost(url, 'evil.example.com')).status).toBe(403)
    const allowed = await statusWithHost(url, new URL(url).host, { origin: 'http://app.test:5173' })
    expect(allowed).toEqual({ status: 200, allowOrigin: 'http://app.test:5173' })
    expect((await statusWithHost(url, new URL(url).host, { origin: 'http://other.test' })).status).toBe(403)
    child.kill('SIGTERM')
    expect((await ended).code).toBe(0)
  })

  it('exits 2 naming a value that is not an origin or a host name', async () => {
    const dir = await workflowsDir()
    const origin = await runLocus(['serve', '--workflows', dir, '--port', '0', '--runs-dir', join(dir, 'runs'), '--allow-origin', 'app.test/path'], { cwd: dir })
    expect(origin.code).toBe(2)
    expect(origin.stderr).toContain('"app.test/path" is not an origin')
    const host = await runLocus(['serve', '--workflows', dir, '--port', '0', '--runs-dir', join(dir, 'runs'), '--allow-host', 'http://locus.test'], { cwd: dir })
    expect(host.code).toBe(2)
    expect(host.stderr).toContain('"http://locus.test" is not a host name')
  })

  it('exits 2 for an API key that is too short, naming where it came from and what --api-key is', async () => {
    const dir = await workflowsDir()
    const result = await runLocus(['serve', '--workflows', dir, '--port', '0', '--runs-dir', join(dir, 'runs')], { cwd: dir, env: { LOCUS_API_KEYS: 'short' } })
    expect(result.code).toBe(2)
    expect(result.stderr).not.toContain('unexpected error')
    expect(result.stderr).toContain('LOCUS_API_KEYS: API key 1 of 1: a secret must be at least 16 characters')
    expect(result.stderr).toContain('--api-key')
    // The secret itself is never echoed.
    expect(result.stderr).not.toMatch(/\bshort\b/)
  })
})
