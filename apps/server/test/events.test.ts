import { JOURNAL_LINE_TYPES, type JournalLine } from '@locus/journal'
import { EventSource, type FetchLike } from 'eventsource'
import { describe, expect, it } from 'vitest'
import { sleep, tempRunsDir, testRuntime, testServer } from './helpers.js'

interface Received {
  readonly id: string
  readonly type: string
  readonly line: JournalLine
}

/** The stored lines as they are served: without the stacks of their errors, which stay in the store. */
async function journalOf(server: Awaited<ReturnType<typeof testServer>>, runId: string, executionId = runId): Promise<JournalLine[]> {
  const lines: JournalLine[] = []
  for await (const line of server.runtime.store.readLines({ runId, executionId })) lines.push(JSON.parse(JSON.stringify(line, (key, value: unknown) => (key === 'stack' ? undefined : value))) as JournalLine)
  return lines
}

async function startRun(server: Awaited<ReturnType<typeof testServer>>, workflow: string, body: unknown = {}, key?: string): Promise<string> {
  const { status, body: accepted } = await server.json<{ runId: string }>(`/v1/workflows/${workflow}/runs`, {
    method: 'POST',
    body: JSON.stringify(body),
    ...(key === undefined ? {} : { key }),
  })
  expect(status).toBe(202)
  return accepted.runId
}

/** Reads a raw event stream until `stop` says so or the stream ends; answers the text read. */
async function readRaw(response: Response, stop: (text: string) => boolean = () => false): Promise<string> {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return text
    text += decoder.decode(value, { stream: true })
    if (stop(text)) {
      await reader.cancel()
      return text
    }
  }
}

function framesOf(text: string): { id: number; event: string; data: JournalLine }[] {
  return text
    .split('\n\n')
    .filter((frame) => frame.startsWith('id: '))
    .map((frame) => {
      const fields = Object.fromEntries(frame.split('\n').map((row) => [row.slice(0, row.indexOf(':')), row.slice(row.indexOf(':') + 2)]))
      return { id: Number(fields.id), event: fields.event as string, data: JSON.parse(fields.data as string) as JournalLine }
    })
}

async function openStreams(server: Awaited<ReturnType<typeof testServer>>): Promise<number> {
  return (await server.json<{ openStreams: number }>('/readyz')).body.openStreams
}

async function eventually(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time')
    await sleep(20)
  }
}

describe('GET /v1/runs/{id}/events', () => {
  it('streams every journal line as an event (id = seq, event = type, data = line) to an EventSource, and ends after run_end', async () => {
    const key = 'events-reader-key-0001'
    const server = await testServer({ apiKeys: key })
    const runId = await startRun(server, 'chatty', { input: { lines: 40 } }, key)
    const received: Received[] = []
    const fetchWithKey: FetchLike = (url, init) => fetch(url, { ...init, headers: { ...init.headers, authorization: `Bearer ${key}` } })
    const source = new EventSource(`${server.url}/v1/runs/${runId}/events`, { fetch: fetchWithKey })
    await new Promise<void>((resolve, reject) => {
      for (const type of JOURNAL_LINE_TYPES) {
        source.addEventListener(type, (event) => {
          // A journal `error` line and EventSource's own `error` event share a name; only the line has data.
          if (typeof event.data !== 'string') return
          received.push({ id: event.lastEventId, type: event.type, line: JSON.parse(event.data) as JournalLine })
          if (type === 'run_end') resolve()
        })
      }
      source.onerror = (error) => {
        if (error.code !== undefined) reject(new Error(`stream failed: ${error.message ?? 'unknown'}`))
      }
    })
    source.close()
    const journal = await journalOf(server, runId)
    expect(received.map((event) => event.line)).toEqual(journal)
    expect(received.map((event) => event.id)).toEqual(journal.map((line) => String(line.seq)))
    expect(received.map((event) => event.type)).toEqual(journal.map((line) => line.type))
    await eventually(async () => (await server.json<{ openStreams: number }>('/readyz')).body.openStreams === 0)
  })

  it('honours Last-Event-ID over ?after=, answers 204 to a client that has run_end, and 400 to a bad cursor', async () => {
    const server = await testServer()
    const runId = await startRun(server, 'chatty', { input: { lines: 20, pauseMs: 0 } })
    await server.json(`/v1/runs/${runId}/result?wait=30`)
    const journal = await journalOf(server, runId)
    const end = journal.at(-1)!
    expect(end.type).toBe('run_end')

    const after = await server.request(`/v1/runs/${runId}/events?after=5`)
    expect(after.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const afterText = await readRaw(after)
    expect(afterText.startsWith('retry: ')).toBe(true)
    expect(framesOf(afterText).map((frame) => frame.id)).toEqual(journal.filter((line) => line.seq > 5).map((line) => line.seq))
    expect(framesOf(afterText).map((frame) => frame.data)).toEqual(journal.filter((line) => line.seq > 5))

    const header = await readRaw(await server.request(`/v1/runs/${runId}/events?after=5`, { headers: { 'Last-Event-ID': '10' } }))
    expect(framesOf(header)[0]!.id).toBe(11)

    const done = await server.request(`/v1/runs/${runId}/events`, { headers: { 'Last-Event-ID': String(end.seq) } })
    expect(done.status).toBe(204)
    expect((await server.request(`/v1/runs/${runId}/events?after=${end.seq + 5}`)).status).toBe(204)
    expect((await server.json(`/v1/runs/${runId}/events`, { headers: { 'Last-Event-ID': 'soon' } })).status).toBe(400)
    expect((await server.json(`/v1/runs/${runId}/events?after=-2`)).status).toBe(400)
    expect((await server.json('/v1/runs/nope/events')).body).toMatchObject({ error: { code: 'not_found' } })
    expect((await server.json(`/v1/runs/${runId}/events?execution=resume-001`)).body).toMatchObject({ error: { code: 'not_found' } })
  })

  it('sends a heartbeat comment while nothing happens; a disconnect unsubscribes and never cancels the run', async () => {
    const server = await testServer({ heartbeatMs: 30 })
    const runId = await startRun(server, 'waits')
    const response = await server.request(`/v1/runs/${runId}/events`)
    const text = await readRaw(response, (sofar) => sofar.split(': heartbeat\n\n').length > 3)
    expect(text).toContain('event: run_start')
    expect(await openStreams(server)).toBeLessThanOrEqual(1)
    await eventually(async () => (await openStreams(server)) === 0)
    expect((await server.json(`/v1/runs/${runId}`)).body).toMatchObject({ status: 'running', live: true })
    // Many clients come and go; the run goes on.
    for (let index = 0; index < 10; index += 1) {
      const controller = new AbortController()
      const pending = server.request(`/v1/runs/${runId}/events`, { signal: controller.signal })
      const opened = await pending
      const reader = opened.body!.getReader()
      await reader.read()
      controller.abort()
    }
    await eventually(async () => (await openStreams(server)) === 0)
    expect((await server.json(`/v1/runs/${runId}`)).body).toMatchObject({ status: 'running', live: true })
    server.runtime.cancel(runId)
  })

  it('follows a run another runtime writes (a store tail), live, to its run_end', async () => {
    const runsDir = tempRunsDir()
    const writer = testRuntime(runsDir)
    const server = await testServer({ runtime: testRuntime(runsDir) })
    const run = await writer.start('chatty', { input: { lines: 60, pauseMs: 3 } })
    const text = await readRaw(await server.request(`/v1/runs/${run.runId}/events`))
    await run.done
    expect(framesOf(text).map((frame) => frame.data)).toEqual(await journalOf(server, run.runId))
  })

  it('streams a resumed run by its latest execution, and an earlier one by ?execution=', async () => {
    const server = await testServer()
    const runId = await startRun(server, 'waits')
    await server.json(`/v1/runs/${runId}/cancel`, { method: 'POST' })
    await server.json(`/v1/runs/${runId}/result?wait=30`)
    const resumed = await server.json<{ executionId: string }>(`/v1/runs/${runId}/resume`, { method: 'POST' })
    expect(resumed.body.executionId).toBe('resume-001')
    const live = await server.request(`/v1/runs/${runId}/events`)
    expect(live.headers.get('locus-execution-id')).toBe('resume-001')
    const reading = readRaw(live)
    await sleep(50)
    server.runtime.cancel(runId)
    expect(framesOf(await reading).map((frame) => frame.data)).toEqual(await journalOf(server, runId, 'resume-001'))
    const root = await readRaw(await server.request(`/v1/runs/${runId}/events?execution=${runId}`))
    expect(framesOf(root).map((frame) => frame.data)).toEqual(await journalOf(server, runId))
  })
})

/**
 * A fetch for EventSource whose current response body the test can cut, like
 * a dropped network (EventSource then reconnects by itself). `prepare` may
 * change or count each request's headers before it goes out.
 */
function cuttableFetch(prepare: (headers: Record<string, string>) => Record<string, string> = (headers) => headers): { readonly fetch: FetchLike; cut(): void } {
  let cutCurrent: (() => void) | undefined
  const cuttable: FetchLike = async (url, init) => {
    const response = await fetch(url, { ...init, headers: prepare({ ...init.headers }) })
    if (response.body === null) return response
    const reader = response.body.getReader()
    let cut = false
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        cutCurrent = () => {
          if (cut) return
          cut = true
          void reader.cancel().catch(() => undefined)
          controller.error(new Error('network cut by the test'))
        }
      },
      async pull(controller) {
        const { done, value } = await reader.read().catch(() => ({ done: true as const, value: undefined }))
        if (cut) return
        if (done) controller.close()
        else controller.enqueue(value)
      },
      cancel: (reason) => reader.cancel(reason),
    })
    return { body, url: response.url, status: response.status, redirected: response.redirected, headers: response.headers }
  }
  return {
    fetch: cuttable,
    cut: () => {
      cutCurrent?.()
    },
  }
}

const RECONNECTS = process.env.LOCUS_SERVER_RECONNECTS === 'full' ? 100 : 30

describe(`reconnecting with Last-Event-ID (${RECONNECTS} disconnects)`, () => {
  it('the union of the events received over every connection is the journal exactly, in order, with no duplicate', async () => {
    const server = await testServer({ heartbeatMs: 15, sseRetryMs: 5 })
    const lines = Math.max(300, RECONNECTS * 3)
    const runId = await startRun(server, 'chatty', { input: { lines, pauseMs: 2 } })
    // Disconnect when the union reaches these counts: distinct, spread over the run.
    const cuts = new Set<number>()
    while (cuts.size < RECONNECTS) cuts.add(1 + Math.floor(Math.random() * (lines - 1)))
    // At the first of the last three cuts the client stays away until the run ended, so the rest is read from the store.
    const awayUntilEnd = [...cuts].sort((a, b) => a - b).at(-3)!
    const received: Received[] = []
    const headerProblems: string[] = []
    const connections = { live: 0, stored: 0 }
    let clientCloses = 0
    let networkCuts = 0
    let lastId = (): string | undefined => received.at(-1)?.id
    let finished: () => void = () => undefined
    const allDone = new Promise<void>((resolve) => {
      finished = resolve
    })

    // Sends the union's Last-Event-ID on a fresh EventSource, and checks the one EventSource sends by itself.
    const network = cuttableFetch((headers) => {
      const last = lastId()
      if (headers['Last-Event-ID'] === undefined) {
        if (last !== undefined) headers['Last-Event-ID'] = last
      } else if (headers['Last-Event-ID'] !== last) {
        headerProblems.push(`EventSource sent Last-Event-ID ${headers['Last-Event-ID']}, but the last event received was ${String(last)}`)
      }
      connections[server.runtime.live(runId) === undefined ? 'stored' : 'live'] += 1
      return headers
    })

    function connect(): EventSource {
      const source = new EventSource(`${server.url}/v1/runs/${runId}/events`, { fetch: network.fetch })
      // EventSource goes on dispatching the rest of a chunk it already read after close(); a closed client ignores it.
      let closed = false
      const close = (): void => {
        closed = true
        source.close()
      }
      for (const type of JOURNAL_LINE_TYPES) {
        source.addEventListener(type, (event) => {
          if (closed || typeof event.data !== 'string') return
          received.push({ id: event.lastEventId, type: event.type, line: JSON.parse(event.data) as JournalLine })
          if (type === 'run_end') {
            close()
            finished()
            return
          }
          if (!cuts.has(received.length)) return
          if (received.length === awayUntilEnd) {
            clientCloses += 1
            close()
            void eventually(async () => server.runtime.live(runId) === undefined, 30_000).then(() => connect())
          } else if (Math.random() < 0.5) {
            // The client goes away and comes back later as a new EventSource.
            clientCloses += 1
            close()
            setTimeout(() => connect(), Math.floor(Math.random() * 15))
          } else {
            // The network drops, now or a moment later (mid-frame, perhaps); EventSource reconnects by itself.
            networkCuts += 1
            setTimeout(() => {
              network.cut()
            }, Math.floor(Math.random() * 3))
          }
        })
      }
      return source
    }

    connect()
    await allDone
    lastId = () => undefined
    const journal = await journalOf(server, runId)
    expect(headerProblems).toEqual([])
    expect(clientCloses + networkCuts).toBe(RECONNECTS)
    expect(connections.live).toBeGreaterThan(1)
    expect(connections.stored).toBeGreaterThanOrEqual(1)
    expect(received.map((event) => Number(event.id))).toEqual(journal.map((line) => line.seq))
    expect(received.map((event) => event.line)).toEqual(journal)
    expect(received.map((event) => event.type)).toEqual(journal.map((line) => line.type))
    expect((await server.json(`/v1/runs/${runId}`)).body).toMatchObject({ status: 'completed' })
    await eventually(async () => (await openStreams(server)) === 0)
  })
})

describe('one stream for the whole run (?follow=run)', () => {
  it('an EventSource cut at random points gets every line of the root and of its resume once, in order, and stops after the last run_end', async () => {
    const server = await testServer({ heartbeatMs: 15, sseRetryMs: 5 })
    const runId = await startRun(server, 'waits')
    const received: Received[] = []
    let connections = 0
    const network = cuttableFetch((headers) => {
      connections += 1
      return headers
    })
    const source = new EventSource(`${server.url}/v1/runs/${runId}/events?follow=run`, { fetch: network.fetch })
    const closed = new Promise<void>((resolve) => {
      source.addEventListener('error', () => {
        // After the last run_end the server answers the reconnect 204, and EventSource gives up: CLOSED.
        if (source.readyState === EventSource.CLOSED) resolve()
      })
    })
    for (const type of JOURNAL_LINE_TYPES) {
      source.addEventListener(type, (event) => {
        if (typeof event.data !== 'string') return
        received.push({ id: event.lastEventId, type: event.type, line: JSON.parse(event.data) as JournalLine })
        // Cut the network now and then, mid-run: a frame boundary, perhaps the middle of the next.
        if (Math.random() < 0.3) {
          setTimeout(() => {
            network.cut()
          }, Math.floor(Math.random() * 3))
        }
      })
    }
    const seen = (executionId: string, type: string) => async () => received.some((event) => event.line.executionId === executionId && event.type === type)
    await eventually(seen(runId, 'agent_start'))
    network.cut()
    // The root stops without run_end (suspended); the stream waits for what continues it.
    const root = server.runtime.live(runId)
    root?.suspend('moving to another process')
    await root?.done
    await sleep(30)
    network.cut()
    const resumed = await server.json<{ executionId: string }>(`/v1/runs/${runId}/resume`, { method: 'POST' })
    expect(resumed.status).toBe(202)
    await eventually(seen(resumed.body.executionId, 'agent_start'))
    network.cut()
    await server.json(`/v1/runs/${runId}/cancel`, { method: 'POST' })
    await closed
    const journal = [...(await journalOf(server, runId)), ...(await journalOf(server, runId, resumed.body.executionId))]
    expect(journal.filter((line) => line.type === 'run_end')).toHaveLength(1)
    expect(received.map((event) => event.id)).toEqual(journal.map((line) => `${line.executionId}:${line.seq}`))
    expect(received.map((event) => event.line)).toEqual(journal)
    expect(connections).toBeGreaterThan(3)
    await eventually(async () => (await openStreams(server)) === 0)
  })

  it('refuses follow=run with execution, and a Last-Event-ID that is not <executionId>:<seq> or names no execution of the run', async () => {
    const server = await testServer()
    const runId = await startRun(server, 'echo', { input: { ticket: 't-1' } })
    await server.json(`/v1/runs/${runId}/result?wait=10`)
    const both = await server.json<{ error: { code: string; issues: string[] } }>(`/v1/runs/${runId}/events?follow=run&execution=${runId}`)
    expect(both.status).toBe(400)
    expect(both.body.error.issues).toEqual(['query.execution: not with follow=run'])
    const bare = await server.json<{ error: { issues: string[] } }>(`/v1/runs/${runId}/events?follow=run`, { headers: { 'Last-Event-ID': '12' } })
    expect(bare.status).toBe(400)
    expect(bare.body.error.issues).toEqual(['Last-Event-ID: not <executionId>:<seq>'])
    const unknown = await server.json<{ error: { issues: string[] } }>(`/v1/runs/${runId}/events?follow=run`, { headers: { 'Last-Event-ID': 'resume-009:3' } })
    expect(unknown.status).toBe(400)
    expect(unknown.body.error.issues).toEqual(['Last-Event-ID: unknown execution'])
    // A client that has the run_end of the latest execution is told there is nothing more.
    const lines = await journalOf(server, runId)
    const end = lines.at(-1)
    expect(end?.type).toBe('run_end')
    expect((await server.request(`/v1/runs/${runId}/events?follow=run`, { headers: { 'Last-Event-ID': `${runId}:${end?.seq ?? 0}` } })).status).toBe(204)
    // From the start it is the whole journal, ids naming the execution.
    const whole = await readRaw(await server.request(`/v1/runs/${runId}/events?follow=run`))
    const ids = whole.split('\n').filter((row) => row.startsWith('id: ')).map((row) => row.slice(4))
    expect(ids).toEqual(lines.map((line) => `${runId}:${line.seq}`))
  })
})
