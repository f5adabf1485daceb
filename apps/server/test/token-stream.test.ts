import type { JournalLine } from '@locus/journal'
import { type Runtime, createRuntime, createScriptedHost, defineWorkflow } from '@locus/runtime'
import { type RunStore, type StreamRecord, createFileRunStore } from '@locus/store'
import { DefaultChatTransport, type UIMessage, type UIMessageChunk, parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from 'ai'
import { EventSource, type FetchLike } from 'eventsource'
import { describe, expect, it } from 'vitest'
import { createTokenHub } from '../src/token-hub.js'
import { type TokenStreamSink, pushTokenStream, rawFrames, writeTokenStream } from '../src/token-stream.js'
import { sleep, tempRunsDir, testServer } from './helpers.js'

const ANSWER = Array.from({ length: 60 }, (_, index) => `word${String(index)}`).join(' ')

/** Three agent calls a little apart, each answering with sixty words: a stream that grows while a client reads it. */
const talks = defineWorkflow({
  name: 'talks',
  run: async ({ agent }) => {
    let answer = ''
    for (const step of ['one', 'two', 'three']) answer = (await agent(`talk ${step}`)).answer
    return { ok: true, answer }
  },
})

/** One call whose first attempt times out after streaming half an answer; the retry answers. */
const retried = defineWorkflow({
  name: 'retried',
  run: async ({ agent }) => ({ ok: true, answer: (await agent('summarise', { agent: 'analyst', attempts: 2, timeoutMs: 300 })).answer }),
})

/** Waits on an agent that never answers, until it is cancelled. */
const hangs = defineWorkflow({ name: 'hangs', run: async ({ agent }) => ({ ok: true, answer: (await agent('hang')).answer }) })

function streamRuntime(store: RunStore = createFileRunStore(tempRunsDir())): Runtime {
  const host = createScriptedHost({
    rules: [
      { match: { prompt: 'hang' }, steps: [{ hang: true }] },
      { match: { agent: 'analyst' }, steps: [{ hang: true, partial: 'zebra quagga okapi ' }, { text: 'the final summary of T-1' }] },
      { steps: [{ text: ANSWER, delayMs: 30 }] },
    ],
  })
  return createRuntime({ workflows: [talks, retried, hangs], host, store })
}

type Server = Awaited<ReturnType<typeof testServer>>

async function startRun(server: Server, workflow: string): Promise<string> {
  const { status, body } = await server.json<{ runId: string }>(`/v1/workflows/${workflow}/runs`, { method: 'POST', body: '{}' })
  expect(status).toBe(202)
  return body.runId
}

async function journalOf(store: RunStore, runId: string): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  for (const info of await store.listExecutions(runId)) for await (const line of store.readLines(info)) lines.push(line)
  return lines
}

async function recordsOf(store: RunStore, runId: string): Promise<StreamRecord[]> {
  return [...((await store.streams?.read(runId, { limit: 100_000 }))?.records ?? [])]
}

/** The answers the journal holds, in order: what a client must end up showing. */
function answersOf(lines: readonly JournalLine[]): string[] {
  return lines.flatMap((line) => (line.type === 'agent_end' && line.status === 'completed' && typeof line.answer === 'string' ? [line.answer] : []))
}

/** The text of a UI message that counts: its text parts, without those of requests the stream marked discarded. */
function keptText(message: UIMessage): string[] {
  const discarded = new Set(message.parts.flatMap((part) => (part.type === 'data-locus-discarded' ? [JSON.stringify(keyOf(part.data))] : [])))
  return message.parts.flatMap((part) => {
    if (part.type !== 'text') return []
    const locus = part.providerMetadata?.locus
    return locus === undefined || discarded.has(JSON.stringify(keyOf(locus))) ? [] : [part.text]
  })
}

function keyOf(value: unknown): unknown[] {
  const key = value as { executionId: string; callId: string; attempt: number; llmAttempt: number }
  return [key.executionId, key.callId, key.attempt, key.llmAttempt]
}

async function lastMessage(chunks: ReadableStream<UIMessageChunk>): Promise<UIMessage> {
  let last: UIMessage | undefined
  for await (const message of readUIMessageStream({ stream: chunks, terminateOnError: true })) last = message
  if (last === undefined) throw new Error('the stream gave no message')
  return last
}

function chunksOf(body: ReadableStream<Uint8Array>): ReadableStream<UIMessageChunk> {
  return parseJsonEventStream({ stream: body, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        if (!chunk.success) throw chunk.error
        controller.enqueue(chunk.value)
      },
    }),
  )
}

async function waitForEnd(server: Server, runId: string): Promise<void> {
  const { status } = await server.json(`/v1/runs/${runId}/result?wait=30`)
  expect(status).toBe(200)
}

describe('GET /v1/runs/{id}/stream', () => {
  it('gives an EventSource every delta exactly once, in order, across a dropped connection resumed by Last-Event-ID (format=raw)', async () => {
    const runtime = streamRuntime()
    const server = await testServer({ runtime, sseRetryMs: 20 })
    const runId = await startRun(server, 'talks')
    const connections: (string | null)[] = []
    // The first connection is cut after 1,500 bytes, mid-event: the client must pick up after the last whole event it read.
    const cutting: FetchLike = async (url, init) => {
      connections.push(new Headers(init.headers).get('last-event-id'))
      const response = await fetch(url, init)
      if (connections.length > 1 || response.body === null) return response
      const reader: ReadableStreamDefaultReader<Uint8Array> = (response.body as ReadableStream<Uint8Array>).getReader()
      let sent = 0
      const cut = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { done, value } = await reader.read()
          if (done) {
            controller.close()
            return
          }
          const room = 1_500 - sent
          if (value.byteLength >= room) {
            controller.enqueue(value.subarray(0, room))
            await reader.cancel()
            controller.error(new Error('connection cut'))
            return
          }
          sent += value.byteLength
          controller.enqueue(value)
        },
      })
      return new Response(cut, { status: response.status, headers: response.headers })
    }
    const received: { id: string; record: StreamRecord }[] = []
    const source = new EventSource(`${server.url}/v1/runs/${runId}/stream?format=raw`, { fetch: cutting })
    await new Promise<void>((resolve, reject) => {
      source.onmessage = (event) => {
        received.push({ id: event.lastEventId, record: JSON.parse(event.data) as StreamRecord })
      }
      source.addEventListener('done', () => {
        resolve()
      })
      setTimeout(() => {
        reject(new Error(`no done event; ${received.length} records`))
      }, 10_000).unref()
    })
    source.close()
    const stored = await recordsOf(runtime.store, runId)
    // Three requests of sixty words, each ended: 183 records, offsets 0..182, each once.
    expect(stored).toHaveLength(183)
    expect(received.map((event) => event.record)).toEqual(stored)
    expect(received.map((event) => event.id)).toEqual(stored.map((record) => String(record.offset)))
    expect(connections).toHaveLength(2)
    expect(connections[0]).toBeNull()
    const resumedAfter = Number(connections[1])
    expect(resumedAfter).toBeGreaterThanOrEqual(0)
    expect(resumedAfter).toBeLessThan(182)
    // The records as sent hold the answer of each call, token by token.
    const answers = answersOf(await journalOf(runtime.store, runId))
    expect(answers).toEqual([ANSWER, ANSWER, ANSWER])
    const byCall = new Map<string, string>()
    for (const { record } of received) if (record.kind === 'delta') byCall.set(record.callId, (byCall.get(record.callId) ?? '') + (record.text ?? ''))
    expect([...byCall.values()]).toEqual(answers)
    // The client has everything: 204, so it stops reconnecting.
    expect((await server.request(`/v1/runs/${runId}/stream?format=raw`, { headers: { 'Last-Event-ID': '182' } })).status).toBe(204)
  })

  it("speaks the AI SDK's UI message stream: its own reader turns the output into the journal's answer, also through the resume URL useChat uses", async () => {
    const runtime = streamRuntime()
    const server = await testServer({ runtime })
    const runId = await startRun(server, 'talks')
    // Read live, from before the first token.
    const response = await server.request(`/v1/runs/${runId}/stream`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(response.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1')
    const message = await lastMessage(chunksOf(response.body!))
    const answers = answersOf(await journalOf(runtime.store, runId))
    expect(message.id).toBe(runId)
    expect(keptText(message)).toEqual(answers)
    expect(message.parts.filter((part) => part.type === 'data-locus-attempt')).toHaveLength(3)
    expect(message.parts.flatMap((part) => (part.type === 'text' ? [part.state] : []))).toEqual(['done', 'done', 'done'])

    // useChat resumes with GET {api}/{chatId}/stream: with api /v1/runs and the run id as chat id, that is this route.
    const transport = new DefaultChatTransport({ api: `${server.url}/v1/runs` })
    const replay = await transport.reconnectToStream({ chatId: runId })
    expect(replay).not.toBeNull()
    expect(keptText(await lastMessage(replay!))).toEqual(answers)

    // A connection that starts mid-request opens that request's text itself: the reader takes every chunk.
    const stored = await recordsOf(runtime.store, runId)
    const middle = stored.findIndex((record) => record.kind === 'delta' && record.callId === stored[100]?.callId)
    const late = await server.request(`/v1/runs/${runId}/stream`, { headers: { 'Last-Event-ID': String(middle + 5) } })
    const tail = await lastMessage(chunksOf(late.body!))
    expect(keptText(tail).join('')).toBe(stored.filter((record) => record.offset > middle + 5 && record.kind === 'delta').map((record) => record.text).join(''))
  })

  it('marks the text of a timed-out attempt discarded, in raw records and in the UI message, and keeps the answer that counts', async () => {
    const runtime = streamRuntime()
    const server = await testServer({ runtime })
    const runId = await startRun(server, 'retried')
    await waitForEnd(server, runId)
    const raw = await server.request(`/v1/runs/${runId}/stream?format=raw`)
    const text = await raw.text()
    const records = text
      .split('\n\n')
      .filter((frame) => frame.startsWith('id: '))
      .map((frame) => JSON.parse(frame.slice(frame.indexOf('data: ') + 6)) as StreamRecord)
    expect(text.trimEnd().endsWith('event: done\ndata: {}')).toBe(true)
    const first = records.filter((record) => record.attempt === 1)
    expect(first.map((record) => record.kind)).toEqual(['delta', 'delta', 'delta', 'discarded'])
    expect(first.at(-1)).toEqual({ offset: first.at(-1)?.offset, executionId: runId, callId: first[0]?.callId, attempt: 1, llmAttempt: 1, kind: 'discarded', cause: 'call-timeout' })
    expect(first.map((record) => record.text ?? '').join('')).toBe('zebra quagga okapi ')
    const second = records.filter((record) => record.attempt === 2)
    expect(second.at(-1)?.kind).toBe('end')
    const answers = answersOf(await journalOf(runtime.store, runId))
    expect(answers).toEqual(['the final summary of T-1'])
    expect(second.map((record) => record.text ?? '').join('')).toBe(answers[0])

    const message = await lastMessage(chunksOf((await server.request(`/v1/runs/${runId}/stream`)).body!))
    expect(keptText(message)).toEqual(answers)
    const texts = message.parts.filter((part) => part.type === 'text')
    expect(texts.map((part) => part.text)).toEqual(['zebra quagga okapi ', 'the final summary of T-1'])
    expect(texts[0]?.providerMetadata?.locus).toMatchObject({ attempt: 1, discarded: true, cause: 'call-timeout' })
    expect(message.parts.find((part) => part.type === 'data-locus-discarded')).toMatchObject({ data: { attempt: 1, llmAttempt: 1, cause: 'call-timeout' } })
  })

  it('answers 404 for a run that does not exist, 410 with the first offset kept once records were pruned, 400 for a bad cursor', async () => {
    const runsDir = tempRunsDir()
    const store = createFileRunStore(runsDir, { streamRetention: 0 })
    const runtime = streamRuntime(store)
    const server = await testServer({ runtime })
    const missing = await server.json<{ error: { code: string; message: string } }>('/v1/runs/no-such-run/stream')
    expect(missing.status).toBe(404)
    expect(missing.body.error).toMatchObject({ code: 'not_found', message: 'No run "no-such-run".' })
    expect((await server.json('/v1/runs/no-such-run/stream?format=raw')).status).toBe(404)

    const runId = await startRun(server, 'retried')
    await waitForEnd(server, runId)
    expect((await server.json(`/v1/runs/${runId}/stream`, { headers: { 'Last-Event-ID': 'soon' } })).status).toBe(400)
    expect((await server.json(`/v1/runs/${runId}/stream?after=-2`)).status).toBe(400)
    expect((await server.json(`/v1/runs/${runId}/stream?format=ndjson`)).status).toBe(400)
    const before = await recordsOf(store, runId)
    expect(before.length).toBeGreaterThan(4)
    await sleep(5)
    expect(await store.streams?.prune(Date.now())).toMatchObject({ runs: 1, records: before.length })

    const gone = await server.json<{ error: { code: string; message: string; firstKept: number; requestId: string } }>(`/v1/runs/${runId}/stream?format=raw`, {
      headers: { 'Last-Event-ID': '1' },
    })
    expect(gone.status).toBe(410)
    expect(gone.body.error).toMatchObject({ code: 'stream_pruned', firstKept: before.length })
    expect(gone.body.error.requestId).toBe(gone.headers.get('x-request-id'))
    expect((await server.json(`/v1/runs/${runId}/stream`)).status).toBe(410)
    // From the first offset kept on, nothing is missing: the run ended, so the client has everything.
    expect((await server.request(`/v1/runs/${runId}/stream`, { headers: { 'Last-Event-ID': String(before.length - 1) } })).status).toBe(204)
    // The journal is untouched by pruning.
    expect(answersOf(await journalOf(store, runId))).toEqual(['the final summary of T-1'])
  })

  it('waits at an offset beyond the end until records come or the run ends, and needs the runs:read scope', async () => {
    const key = 'stream-reader-key-0001'
    const starter = 'stream-starter-key-001'
    const runtime = streamRuntime()
    const server = await testServer({ runtime, apiKeys: [`${key}:runs:read`, `${starter}:runs:start+runs:cancel`] })
    const { body } = await server.json<{ runId: string }>('/v1/workflows/hangs/runs', { method: 'POST', body: '{}', key: starter })
    const runId = body.runId
    expect((await server.json(`/v1/runs/${runId}/stream`)).status).toBe(401)
    expect((await server.json(`/v1/runs/${runId}/stream`, { key: starter })).status).toBe(403)
    const response = await server.request(`/v1/runs/${runId}/stream?format=raw&after=40`, { key })
    expect(response.status).toBe(200)
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let text = ''
    const reading = (async () => {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return
        text += decoder.decode(value, { stream: true })
      }
    })()
    await sleep(300)
    expect(text).toBe('retry: 2000\n\n')
    expect((await server.json(`/v1/runs/${runId}/cancel`, { method: 'POST', body: '{}', key: starter })).status).toBe(202)
    await reading
    expect(text).toBe('retry: 2000\n\nevent: done\ndata: {}\n\n')
    // The events token of the run reads its token stream too (the run ended with nothing streamed: 204); a forged one does not.
    const issued = await server.json<{ token: string }>(`/v1/runs/${runId}/events-token`, { method: 'POST', key })
    expect((await server.request(`/v1/runs/${runId}/stream?token=${encodeURIComponent(issued.body.token)}`)).status).toBe(204)
    expect((await server.json(`/v1/runs/${runId}/stream?token=v1.1.${'A'.repeat(43)}`)).status).toBe(401)
  })

  it('drops a subscriber whose socket takes nothing for the drain timeout, without waiting on it any longer', async () => {
    const listeners = new Map<string, () => void>()
    const written: string[] = []
    let destroyed = false
    let ended = false
    const sink: TokenStreamSink = {
      writeHead: () => undefined,
      write: (chunk) => {
        written.push(typeof chunk === 'string' ? chunk : new TextDecoder().decode(chunk))
        return written.length < 3
      },
      end: () => {
        ended = true
      },
      destroy: () => {
        destroyed = true
      },
      once: (event, listener) => {
        listeners.set(event, listener)
      },
      off: (event) => {
        listeners.delete(event)
      },
      get destroyed() {
        return destroyed
      },
    }
    let pulled = 0
    const pieces: AsyncIterator<string> = {
      next: () => {
        pulled += 1
        return Promise.resolve({ done: false, value: `id: ${String(pulled)}\ndata: {}\n\n` })
      },
    }
    let closed = 0
    let dropped = 0
    writeTokenStream(sink, {}, {
      pieces,
      heartbeatMs: 60_000,
      retryMs: 1000,
      drainTimeoutMs: 50,
      signal: new AbortController().signal,
      onClose: () => (closed += 1),
      onDrop: () => (dropped += 1),
      onError: (error) => {
        throw error
      },
    })
    await sleep(150)
    expect(destroyed).toBe(true)
    expect(ended).toBe(false)
    expect([closed, dropped]).toEqual([1, 1])
    // The retry line and two frames were taken; the third was not, and nothing more was read for the stalled client.
    expect(written).toEqual(['retry: 1000\n\n', 'id: 1\ndata: {}\n\n', 'id: 2\ndata: {}\n\n'])
    expect(pulled).toBe(2)
  })

  it('drops a pushed subscriber whose socket holds frames for the drain timeout, while the run goes on for the others', async () => {
    const records: StreamRecord[] = []
    const waiters = new Set<() => void>()
    const streams = {
      read: (_runId: string, options?: { readonly after?: number }) =>
        Promise.resolve({ records: records.filter((record) => record.offset > (options?.after ?? -1)), firstKept: 0, next: records.length, endedAt: undefined }),
      wait: (_runId: string, after: number, options?: { readonly signal?: AbortSignal | undefined }) =>
        records.length - 1 > after
          ? Promise.resolve(true)
          : new Promise<boolean>((resolve) => {
              const wake = (): void => {
                waiters.delete(wake)
                resolve(true)
              }
              waiters.add(wake)
              options?.signal?.addEventListener('abort', wake)
            }),
    }
    const append = (): void => {
      records.push({ offset: records.length, executionId: 'e', callId: 'c', attempt: 1, llmAttempt: 1, kind: 'delta', text: 'x' })
      for (const wake of [...waiters]) wake()
    }
    const hub = createTokenHub({ streams, readRow: () => Promise.resolve(undefined) })
    const sinks = [false, true].map((stalls) => {
      const written: string[] = []
      const state = { destroyed: false, dropped: 0, closed: 0 }
      const sink = {
        writableLength: 0,
        writeHead: () => undefined,
        // The stalled one takes the stream's opening and nothing after it: its socket never drains.
        write: (chunk: Uint8Array | string) => {
          written.push(typeof chunk === 'string' ? chunk : new TextDecoder().decode(chunk))
          return !stalls || written.length < 2
        },
        end: () => undefined,
        destroy: () => {
          state.destroyed = true
        },
        once: () => undefined,
        off: () => undefined,
        get destroyed() {
          return state.destroyed
        },
      }
      pushTokenStream(sink, {}, {
        hub,
        runId: 'run',
        after: -1,
        knownEnd: -1,
        frames: rawFrames(),
        heartbeatMs: 60_000,
        retryMs: 1000,
        drainTimeoutMs: 50,
        signal: new AbortController().signal,
        onClose: () => (state.closed += 1),
        onDrop: () => (state.dropped += 1),
        onError: (error) => {
          throw error
        },
      })
      return { written, state }
    })
    const [keeping, stalled] = sinks as [(typeof sinks)[number], (typeof sinks)[number]]
    append()
    await sleep(150)
    append()
    await sleep(20)
    expect([stalled.state.destroyed, stalled.state.dropped, stalled.state.closed]).toEqual([true, 1, 1])
    expect(keeping.state.destroyed).toBe(false)
    expect(keeping.written.filter((text) => text.startsWith('id: '))).toEqual([expect.stringContaining('"offset":0'), expect.stringContaining('"offset":1')])
    expect(hub.feeds()).toBe(1)
  })
})
