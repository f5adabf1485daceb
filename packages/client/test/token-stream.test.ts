import { createRuntime, createScriptedHost, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { LocusApiError, type TokenStreamRecord, type UiStreamChunk, createLocusClient } from '../src/index.js'
import { KEY, tempRunsDir, testServer } from './helpers.js'

const ANSWER = Array.from({ length: 40 }, (_, index) => `token${String(index)}`).join(' ')

/** Two agent calls; the first one's first attempt times out after streaming part of an answer. */
const talks = defineWorkflow({
  name: 'talks',
  run: async ({ agent }) => {
    await agent('first', { agent: 'slow', attempts: 2, timeoutMs: 200 })
    return { ok: true, answer: (await agent('second')).answer }
  },
})

function streamServer() {
  const host = createScriptedHost({
    rules: [
      { match: { agent: 'slow' }, steps: [{ hang: true, partial: 'thrown away ' }, { text: ANSWER, delayMs: 20 }] },
      { steps: [{ text: ANSWER, delayMs: 20 }] },
    ],
  })
  return testServer({ runtime: createRuntime({ workflows: [talks], host, runsDir: tempRunsDir() }), sseRetryMs: 5 })
}

/** A fetch whose token streams drop after a few hundred bytes, often mid-event; records each connection's Last-Event-ID. */
function droppingFetch(connections: (string | null)[]): typeof fetch {
  let budget = 150
  return async (input, init) => {
    const response = await fetch(input, init)
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
    if (!url.includes('/stream') || response.body === null) return response
    connections.push(new Headers(init?.headers).get('last-event-id'))
    budget = (budget * 7) % 900 + 120
    const reader: ReadableStreamDefaultReader<Uint8Array> = response.body.getReader()
    let left = budget
    const cut = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read()
        if (done) {
          controller.close()
          return
        }
        if (value.byteLength < left) {
          left -= value.byteLength
          controller.enqueue(value)
          return
        }
        controller.enqueue(value.slice(0, left))
        await reader.cancel()
        controller.error(new TypeError('terminated: other side closed'))
      },
    })
    return new Response(cut, { status: response.status, headers: response.headers })
  }
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const seen: T[] = []
  for await (const item of items) seen.push(item)
  return seen
}

describe('client.stream', () => {
  it('yields every record once, in offset order, across connections dropped mid-event, with the timed-out attempt discarded', async () => {
    const server = await streamServer()
    const connections: (string | null)[] = []
    const locus = createLocusClient({ baseUrl: server.url, apiKey: KEY, fetch: droppingFetch(connections) })
    const run = await locus.startRun('talks')
    const records = await collect(locus.stream(run.runId))
    const stored = (await server.runtime.store.streams?.read(run.runId, { limit: 10_000 }))?.records ?? []
    expect(records).toEqual(stored.map((record) => ({ ...record })))
    expect(records.map((record) => record.offset)).toEqual(records.map((_, index) => index))
    expect(connections.length).toBeGreaterThan(3)
    expect(connections.slice(1).every((id) => id !== null)).toBe(true)
    const discarded = records.filter((record) => record.kind === 'discarded')
    expect(discarded).toEqual([expect.objectContaining({ attempt: 1, llmAttempt: 1, cause: 'call-timeout' })])
    const kept = (callId: string): string =>
      records
        .filter((record) => record.callId === callId && record.kind === 'delta')
        .map((record) => record.text)
        .join('')
    expect(kept(discarded[0]!.callId)).toBe('thrown away ')
    const answered = [...new Set(records.filter((record) => record.kind === 'end').map((record) => record.callId))]
    expect(answered.map(kept)).toEqual([ANSWER, ANSWER])

    // From an offset on; and the UI message stream's chunks with format 'ui'.
    const middle = records[20]!.offset
    expect(await collect(locus.stream(run.runId, { after: middle }))).toEqual(records.filter((record) => record.offset > middle))
    const chunks: UiStreamChunk[] = await collect(createLocusClient({ baseUrl: server.url, apiKey: KEY }).stream(run.runId, { format: 'ui' }))
    expect(chunks[0]).toEqual({ type: 'start', messageId: run.runId })
    expect(chunks.at(-1)).toEqual({ type: 'finish' })
    expect(chunks.filter((chunk) => chunk.type === 'text-delta').map((chunk) => chunk.delta).join('')).toBe(`thrown away ${ANSWER}${ANSWER}`)
    expect(chunks.filter((chunk) => chunk.type === 'data-locus-discarded')).toHaveLength(1)
  })

  it('throws 404 not_found for an unknown run and 410 stream_pruned with the first offset kept', async () => {
    const server = await streamServer()
    const locus = createLocusClient({ baseUrl: server.url, apiKey: KEY })
    await expect(collect(locus.stream('no-such-run'))).rejects.toMatchObject({ code: 'not_found', status: 404 })
    const run = await locus.startRun('talks')
    const records: TokenStreamRecord[] = await collect(locus.stream(run.runId))
    // Past the default retention of 7 days after the run's end.
    await server.runtime.store.streams?.prune(Date.now() + 8 * 24 * 60 * 60 * 1000)
    const error: unknown = await collect(locus.stream(run.runId, { after: 3 })).catch((thrown: unknown) => thrown)
    expect(LocusApiError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ code: 'stream_pruned', status: 410, firstKept: records.length })
    expect(await collect(locus.stream(run.runId, { after: records.length - 1 }))).toEqual([])
  })
})
