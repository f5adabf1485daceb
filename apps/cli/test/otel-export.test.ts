import { writeFile } from 'node:fs/promises'
import { type IncomingMessage, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { repoRoot, runLocus, settle, startLocus, tempDir } from './helpers.js'

const runtimeEntry = join(repoRoot, 'packages', 'runtime', 'dist', 'index.js')

interface Received {
  readonly path: string
  readonly contentType: string
  readonly body: string
}

/** A loopback OTLP/HTTP receiver: records every POST and answers 200 as a collector does. */
async function collector(): Promise<{ url: string; received: Received[]; close: () => Promise<void> }> {
  const received: Received[] = []
  const server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      received.push({ path: request.url ?? '', contentType: request.headers['content-type'] ?? '', body: Buffer.concat(chunks).toString('utf8') })
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, received, close: () => new Promise((resolve) => server.close(() => { resolve() })) }
}

/** The `service.name` of every resource in the OTLP/JSON requests received. */
function serviceNames(received: readonly Received[]): string[] {
  return received.flatMap((request) => {
    const body = JSON.parse(request.body) as { resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] } }[] }
    return body.resourceSpans.map((resource) => resource.resource.attributes.find((attribute) => attribute.key === 'service.name')?.value.stringValue ?? '')
  })
}

/** The names of every span in the OTLP/JSON requests received. */
function spanNames(received: readonly Received[]): string[] {
  return received.flatMap((request) => {
    const body = JSON.parse(request.body) as { resourceSpans: { scopeSpans: { spans: { name: string }[] }[] }[] }
    return body.resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans.map((span) => span.name)))
  })
}

async function workflowFile(dir: string): Promise<string> {
  const file = join(dir, 'traced.mts')
  await writeFile(
    file,
    [
      `import { defineWorkflow } from ${JSON.stringify(runtimeEntry)}`,
      "export default defineWorkflow({ name: 'traced', run: async ({ agent }) => ({ ok: true, answer: (await agent('secret prompt')).answer }) })",
    ].join('\n'),
  )
  await writeFile(join(dir, 'answers.json'), JSON.stringify({ rules: [{ steps: [{ text: 'hi' }] }] }))
  return file
}

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

describe('--otel', () => {
  it('locus run --otel sends the run’s spans over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT before it exits, without the prompt', async () => {
    const otlp = await collector()
    closers.push(otlp.close)
    const dir = await tempDir()
    const file = await workflowFile(dir)
    const run = await runLocus(['run', file, '--otel', '--host', 'scripted', '--fixtures', join(dir, 'answers.json'), '--runs-dir', join(dir, 'runs'), '--quiet'], {
      cwd: dir,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SERVICE_NAME: 'billing-agents', OTEL_RESOURCE_ATTRIBUTES: 'service.name=ignored,deployment.environment=ci' },
    })
    expect(run.stderr).toBe('')
    expect(new Set(serviceNames(otlp.received))).toEqual(new Set(['billing-agents']))
    expect(otlp.received.map((request) => request.body).join('')).toContain('deployment.environment')
    expect(run.code).toBe(0)
    expect(otlp.received.length).toBeGreaterThan(0)
    expect(otlp.received.every((request) => request.path === '/v1/traces' && request.contentType.includes('json'))).toBe(true)
    expect(spanNames(otlp.received).sort()).toEqual(['invoke_agent default', 'invoke_agent default attempt 1', 'invoke_workflow traced'])
    expect(otlp.received.map((request) => request.body).join('')).not.toContain('secret prompt')
  })

  it('locus run --otel warns, and still ends with the run’s exit code, when nothing listens at the endpoint', async () => {
    const otlp = await collector()
    const dead = otlp.url
    await otlp.close()
    const dir = await tempDir()
    const file = await workflowFile(dir)
    const run = await runLocus(['run', file, '--otel', '--host', 'scripted', '--fixtures', join(dir, 'answers.json'), '--runs-dir', join(dir, 'runs'), '--quiet'], {
      cwd: dir,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: dead, OTEL_EXPORTER_OTLP_TIMEOUT: '300' },
    })
    expect(run.code).toBe(0)
    expect(run.stderr).toMatch(/warning: the run's traces could not be sent to http:\/\/127\.0\.0\.1:\d+\/v1\/traces/)
  })

  it('locus serve --otel traces each run it starts and flushes them at shutdown', async () => {
    const otlp = await collector()
    closers.push(otlp.close)
    const dir = await tempDir()
    await workflowFile(dir)
    const child = startLocus(['serve', '--otel', '--workflows', dir, '--port', '0', '--model-host', 'scripted', '--fixtures', join(dir, 'answers.json'), '--runs-dir', join(dir, 'runs')], {
      cwd: dir,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url },
    })
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
    const started = await fetch(`${url}/v1/workflows/traced/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    const { runId } = (await started.json()) as { runId: string }
    expect(await (await fetch(`${url}/v1/runs/${runId}/result?wait=10`)).json()).toMatchObject({ disposition: 'completed' })
    child.kill('SIGTERM')
    expect((await ended).code).toBe(0)
    expect(spanNames(otlp.received)).toContain('invoke_workflow traced')
    // No OTEL_SERVICE_NAME: the spans say who sent them rather than unknown_service:node.
    expect(new Set(serviceNames(otlp.received))).toEqual(new Set(['locus']))
  })
})
