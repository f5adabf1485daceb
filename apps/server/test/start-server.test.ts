import { describe, expect, it } from 'vitest'
import { isLoopback, startServer } from '../src/index.js'
import { onCleanup, sleep, tempRunsDir, testRuntime, testServer } from './helpers.js'

describe('startServer', () => {
  it('knows loopback addresses', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) expect(isLoopback(host), host).toBe(true)
    for (const host of ['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'example.com', '']) expect(isLoopback(host), host).toBe(false)
  })

  it('without API keys refuses any host but loopback, and says why', async () => {
    const runtime = testRuntime()
    await expect(startServer({ runtime, host: '0.0.0.0', port: 0, env: {} })).rejects.toThrow(
      /Refusing to listen on 0\.0\.0\.0 without API keys: anyone who can reach it could start, read and cancel runs\. Set LOCUS_API_KEYS/,
    )
    await expect(startServer({ runtime, host: '0.0.0.0', port: 0, env: { LOCUS_API_KEYS: ' , ' } })).rejects.toThrow(/Refusing/)
    const withKeys = await startServer({ runtime, host: '0.0.0.0', port: 0, env: { LOCUS_API_KEYS: 'a-key-long-enough-0001' } })
    onCleanup(() => withKeys.close())
    expect(withKeys.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/)
    expect((await fetch(`http://127.0.0.1:${withKeys.port}/v1/runs`)).status).toBe(401)
  })

  it('answers with the bound port and URL, and reports a port in use', async () => {
    const server = await testServer()
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`)
    expect(server.port).toBeGreaterThan(0)
    await expect(startServer({ runtime: testRuntime(), port: server.port, env: {} })).rejects.toThrow(/EADDRINUSE/)
    await expect(startServer({ runtime: testRuntime(), port: 70_000, env: {} })).rejects.toThrow(/port must be/)
  })

  it('close() lets a run that ends within the grace period finish', async () => {
    const runtime = testRuntime()
    const server = await startServer({ runtime, port: 0, env: {}, shutdownGraceMs: 10_000 })
    const started = await fetch(`${server.url}/v1/workflows/chatty/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: { lines: 30, pauseMs: 5 } }) })
    const { runId } = (await started.json()) as { runId: string }
    await server.close()
    expect((await runtime.get(runId)).latest.summary.standing).toBe('completed')
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow()
  })

  it('close() ends event streams and long polls, cancels runs past the grace period, and a new server resumes them', async () => {
    const runsDir = tempRunsDir()
    const runtime = testRuntime(runsDir)
    const server = await startServer({ runtime, port: 0, env: {}, shutdownGraceMs: 200, onError: () => undefined })
    const started = await fetch(`${server.url}/v1/workflows/waits/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    const { runId } = (await started.json()) as { runId: string }
    const events = await fetch(`${server.url}/v1/runs/${runId}/events`)
    // Read until the stream has delivered run_start (a loaded machine may take a while), then on to its end.
    const reader = (events.body as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    let received = ''
    while (!received.includes('event: run_start')) {
      const chunk = await reader.read()
      if (chunk.done) break
      received += decoder.decode(chunk.value, { stream: true })
    }
    const streamText = (async () => {
      for (;;) {
        const chunk = await reader.read()
        if (chunk.done) return received
        received += decoder.decode(chunk.value, { stream: true })
      }
    })()
    const poll = fetch(`${server.url}/v1/runs/${runId}/result?wait=60`)
    await sleep(50)
    const closing = server.close()
    expect(server.close()).toBe(closing)
    const polled = await poll
    expect(polled.status).toBe(202)
    expect(await streamText).toContain('event: run_start')
    await closing
    const stored = await runtime.get(runId)
    expect(stored.latest.summary.standing).toBe('cancelled')
    expect(stored.latest.view.runEnd?.error?.message ?? '').toMatch(/shutting down|cancel/i)

    const next = await testServer({ runtime: testRuntime(runsDir) })
    const resumed = await next.json<{ executionId: string }>(`/v1/runs/${runId}/resume`, { method: 'POST' })
    expect(resumed).toMatchObject({ status: 202, body: { executionId: 'resume-001' } })
    await next.json(`/v1/runs/${runId}/cancel`, { method: 'POST' })
  })

  it('while shutting down, refuses new runs with 503 shutting_down and reports not ready', async () => {
    const { buildServer } = await import('../src/create-server.js')
    const { app, state } = buildServer({ runtime: testRuntime() })
    state.shuttingDown = true
    const started = await app.request('/v1/workflows/echo/runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: { ticket: 'x' } }) })
    expect(started.status).toBe(503)
    expect(await started.json()).toMatchObject({ error: { code: 'shutting_down' } })
    expect((await app.request('/readyz')).status).toBe(503)
    expect((await app.request('/healthz')).status).toBe(200)
  })
})
