import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { jsonLines, runLocus, tempDir } from './helpers.js'

let server: Server
let baseUrl: string
const requests: { path: string; model: string; auth: string | undefined; stream: boolean }[] = []

beforeAll(async () => {
  // A real HTTP server speaking the OpenAI chat completions wire format, as Ollama or vLLM would.
  server = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk: Buffer) => (body += chunk.toString()))
    request.on('end', () => {
      const parsed = JSON.parse(body) as { model: string; stream?: boolean }
      requests.push({ path: request.url ?? '', model: parsed.model, auth: request.headers.authorization, stream: parsed.stream === true })
      const id = `chatcmpl-${requests.length}`
      const usage = { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 }
      if (parsed.stream === true) {
        // Streamed, as Ollama, vLLM and OpenAI answer a request with stream: true.
        response.writeHead(200, { 'content-type': 'text/event-stream' })
        const chunk = (delta: object, finish: string | null, withUsage = false): string =>
          `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: parsed.model, choices: [{ index: 0, delta, finish_reason: finish }], ...(withUsage ? { usage } : {}) })}\n\n`
        response.write(chunk({ role: 'assistant', content: 'A short, ' }, null))
        response.write(chunk({ content: 'plain answer.' }, null))
        response.write(chunk({}, 'stop', true))
        response.end('data: [DONE]\n\n')
        return
      }
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created: 1,
          model: parsed.model,
          choices: [{ index: 0, message: { role: 'assistant', content: 'A short, plain answer.' }, finish_reason: 'stop' }],
          usage,
        }),
      )
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
})

afterAll(() => {
  server.close()
})

describe('--host openai-compatible', () => {
  it('runs a workflow against a real OpenAI-compatible endpoint from flags', async () => {
    const dir = await tempDir()
    expect((await runLocus(['init', 'starter'], { cwd: dir })).code).toBe(0)
    const run = await runLocus(['run', 'starter.mts', '--host', 'openai-compatible', '--base-url', baseUrl, '--model', 'tiny', '--api-key', 'secret', '--runs-dir', 'runs', '--json'], { cwd: dir })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(jsonLines(run.stdout).at(-1)).toMatchObject({ standing: 'completed', agentCalls: 2, result: { summary: 'A short, plain answer.' } })
    expect(requests.length).toBeGreaterThanOrEqual(2)
    expect(requests.every((request) => request.path === '/v1/chat/completions' && request.model === 'tiny' && request.auth === 'Bearer secret')).toBe(true)
  })

  it('takes the endpoint from LOCUS_MODEL_BASE_URL and LOCUS_MODEL when no --host is given', async () => {
    const dir = await tempDir()
    await runLocus(['init', 'starter'], { cwd: dir })
    const before = requests.length
    const run = await runLocus(['run', 'starter.mts', '--fixtures', 'starter.fixtures.json', '--host', 'openai-compatible', '--runs-dir', 'runs'], {
      cwd: dir,
      env: { LOCUS_MODEL_BASE_URL: baseUrl, LOCUS_MODEL: 'tiny' },
    })
    // --fixtures belongs to the scripted host: a usage error, not a silent choice.
    expect(run.code).toBe(2)
    const envRun = await runLocus(['run', 'starter.mts', '--runs-dir', 'runs', '--quiet'], { cwd: dir, env: { LOCUS_MODEL_BASE_URL: baseUrl, LOCUS_MODEL: 'tiny' } })
    expect(envRun.code).toBe(0)
    expect(envRun.stdout).toMatch(/^completed {2}starter/m)
    expect(requests.length - before).toBeGreaterThanOrEqual(2)
  })

  it('--model-host with --no-stream and turn bounds asks for whole completions and records the bounds in run_start', async () => {
    const dir = await tempDir()
    await runLocus(['init', 'starter'], { cwd: dir })
    const before = requests.length
    const run = await runLocus(['run', 'starter.mts', '--model-host', 'openai-compatible', '--base-url', baseUrl, '--model', 'tiny', '--no-stream', '--turn-timeout', '10m', '--turn-idle', 'off', '--runs-dir', 'runs', '--json'], { cwd: dir })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const sent = requests.slice(before)
    expect(sent.length).toBeGreaterThanOrEqual(2)
    expect(sent.every((request) => !request.stream)).toBe(true)
    const start = jsonLines(run.stdout).find((line) => line.type === 'run_start') as { options?: { hostSettings?: unknown } } | undefined
    expect(start?.options?.hostSettings).toMatchObject({ streaming: false, turnBudget: { totalMs: 600_000, idleMs: null } })
  })
})
