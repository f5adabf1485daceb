import http from 'node:http'
import type { JournalLine } from '@locus/journal'
import { createRuntime, createScriptedHost, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { sleep, tempRunsDir, testServer } from './helpers.js'

/** Opens when the test says so: the run writes its burst only after the client is live. */
function gate(): { readonly opened: Promise<void>; open(): void } {
  let open: () => void = () => undefined
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  return { opened, open }
}

let burstGate = gate()

/** Waits for the gate, then writes `lines` log lines of `padBytes` each in one go, without yielding between them. */
const bursts = defineWorkflow({
  name: 'bursts',
  input: z.object({ lines: z.number().int().min(1), padBytes: z.number().int().min(0) }),
  run: async ({ input, log }) => {
    await burstGate.opened
    const pad = 'x'.repeat(input.padBytes)
    for (let index = 0; index < input.lines; index += 1) log(`burst ${String(index)}`, { pad })
    return { ok: true, lines: input.lines }
  },
})

function runtimeWithBursts() {
  return createRuntime({ workflows: [bursts], host: createScriptedHost({ rules: [{ steps: [{ text: 'fine' }] }] }), runsDir: tempRunsDir() })
}

/** The complete frames of an event stream's text: their ids and journal lines. */
function completeFrames(text: string): { id: number; line: JournalLine }[] {
  const whole = text.slice(0, text.lastIndexOf('\n\n') + 2)
  return whole
    .split('\n\n')
    .filter((frame) => frame.startsWith('id: '))
    .map((frame) => {
      const rows = frame.split('\n')
      const data = rows.find((row) => row.startsWith('data: '))!.slice(6)
      return { id: Number(rows[0]!.slice(4)), line: JSON.parse(data) as JournalLine }
    })
}

async function eventually(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time')
    await sleep(20)
  }
}

describe('pushed event stream of a run this server executes', () => {
  it('drops a live client that falls behind by more than eventBufferBytes, never waits for it, and the client resumes with Last-Event-ID to every line once, in order', async () => {
    burstGate = gate()
    const server = await testServer({ runtime: runtimeWithBursts(), eventBufferBytes: 16 * 1024 })
    const lines = 400
    const { body: started } = await server.json<{ runId: string }>('/v1/workflows/bursts/runs', { method: 'POST', body: JSON.stringify({ input: { lines, padBytes: 32 * 1024 } }) })
    const runId = started.runId
    const handle = server.runtime.live(runId)
    expect(handle).toBeDefined()

    // A client that reads the beginning, then stops reading.
    let text = ''
    let ended = false
    const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get(`${server.url}/v1/runs/${runId}/events`, { headers: { accept: 'text/event-stream' } }, resolve).on('error', reject)
    })
    expect(response.statusCode).toBe(200)
    response.setEncoding('utf8')
    response.on('data', (chunk: string) => {
      text += chunk
    })
    response.on('error', () => undefined)
    response.on('close', () => {
      ended = true
    })
    await eventually(() => Promise.resolve(text.includes('event: run_start')))
    response.pause()
    const readBeforeStall = text.length

    burstGate.open()
    // The run ends while the client reads nothing: the writer does not wait for a reader.
    const result = await handle!.done
    expect(result.disposition).toBe('completed')
    expect(text.length).toBe(readBeforeStall)
    // The server gave up on the client: its stream is closed, not held open with 13 MB queued for it.
    await eventually(async () => (await server.json<{ openStreams: number }>('/readyz')).body.openStreams === 0)

    // What reached the client's socket before the drop is readable; then the connection ends.
    response.resume()
    await eventually(() => Promise.resolve(ended))
    const first = completeFrames(text)
    expect(first.at(-1)?.line.type).not.toBe('run_end')

    // It reconnects from the last event it read and gets the rest, from the store.
    const rest = await fetch(`${server.url}/v1/runs/${runId}/events`, { headers: { 'last-event-id': String(first.at(-1)!.id) } })
    expect(rest.status).toBe(200)
    const second = completeFrames(await rest.text())
    const ids = [...first, ...second].map((frame) => frame.id)
    const journal: number[] = []
    for await (const line of server.runtime.store.readLines({ runId, executionId: runId })) journal.push(line.seq)
    expect(ids).toEqual(journal)
    expect(second.at(-1)?.line.type).toBe('run_end')
  })

  it('a client that keeps up gets every line of a live run as it is written, and the stream ends after run_end', async () => {
    burstGate = gate()
    const server = await testServer({ runtime: runtimeWithBursts() })
    const { body: started } = await server.json<{ runId: string }>('/v1/workflows/bursts/runs', { method: 'POST', body: JSON.stringify({ input: { lines: 50, padBytes: 100 } }) })
    const response = await fetch(`${server.url}/v1/runs/${started.runId}/events`)
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let text = ''
    while (!text.includes('event: run_start')) text += decoder.decode((await reader.read()).value, { stream: true })
    burstGate.open()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      text += decoder.decode(value, { stream: true })
    }
    const frames = completeFrames(text)
    const journal: number[] = []
    for await (const line of server.runtime.store.readLines({ runId: started.runId, executionId: started.runId })) journal.push(line.seq)
    expect(frames.map((frame) => frame.id)).toEqual(journal)
    expect(frames.filter((frame) => frame.line.type === 'log')).toHaveLength(50)
    await eventually(async () => (await server.json<{ openStreams: number }>('/readyz')).body.openStreams === 0)
  })
})
