import type { JournalLine } from '@locus/journal'
import { describe, expect, it } from 'vitest'
import { LocusApiError, createLocusClient } from '../src/index.js'
import { KEY, eventually, storedJournal, testServer } from './helpers.js'

/** A seeded generator, so a failing cut pattern can be run again. */
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Passes `budget` bytes of a body through, then fails the stream as a dropped connection would: often in the middle of an event. */
function cutAfter(body: ReadableStream<Uint8Array>, budget: number): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  let left = budget
  return new ReadableStream<Uint8Array>({
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
    async cancel() {
      await reader.cancel()
    },
  })
}

interface Connection {
  readonly lastEventId: string | null
  readonly status: number
}

/** A fetch whose event streams drop after a random number of bytes, recording each connection. */
function droppingFetch(next: () => number, connections: Connection[]): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init)
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
    if (!url.includes('/events')) return response
    connections.push({ lastEventId: new Headers(init?.headers).get('last-event-id'), status: response.status })
    if (response.body === null) return response
    const budget = 20 + Math.floor(next() * 700)
    return new Response(cutAfter(response.body, budget), { status: response.status, headers: response.headers })
  }
}

async function collect(lines: AsyncIterable<JournalLine>): Promise<JournalLine[]> {
  const seen: JournalLine[] = []
  for await (const line of lines) seen.push(line)
  return seen
}

describe('client.events', () => {
  it('yields the journal exactly, once each and in order, across ~100 connections dropped at random bytes (live and stored runs)', async () => {
    const server = await testServer({ sseRetryMs: 7 })
    const next = random(20261203)
    const connections: Connection[] = []
    const waits: number[] = []
    const locus = createLocusClient({
      baseUrl: server.url,
      apiKey: KEY,
      fetch: droppingFetch(next, connections),
      sleep: async (ms) => {
        waits.push(ms)
      },
    })
    for (const [lines, live] of [[50, true], [40, true], [50, false]] as const) {
      const run = await locus.startRun('chatty', { input: { lines, pauseMs: 1 } })
      if (!live) await locus.waitForResult(run.runId)
      const startedAt = connections.length
      const after = Math.floor(next() * 3) - 1 // -1 (from the start), 0 or 1
      const seen = await collect(locus.events(run.runId, { ...(after >= 0 ? { after } : {}) }))
      const stored = await storedJournal(server.runtime, run.runId)
      expect(seen).toEqual(stored.filter((line) => line.seq > after))
      expect(seen.at(-1)?.type).toBe('run_end')
      // Each reconnect names the last line it yielded: the seq of some line before it, never one it skipped.
      const mine = connections.slice(startedAt)
      expect(mine[0]?.lastEventId).toBe(after >= 0 ? String(after) : null)
      for (const connection of mine.slice(1)) {
        const resumedAt = connection.lastEventId === null ? -1 : Number(connection.lastEventId)
        expect(resumedAt === after || stored.some((line) => line.seq === resumedAt)).toBe(true)
      }
    }
    expect(connections.length).toBeGreaterThanOrEqual(100)
    // Every wait before a reconnect is the server's retry hint.
    expect(waits.length).toBe(connections.length - 3)
    expect(new Set(waits)).toEqual(new Set([7]))
    await eventually(async () => ((await locus.ready()).openStreams === 0 ? true : undefined))
  })

  it('ends at once (204) when the caller has run_end already, and follows a live run without drops', async () => {
    const server = await testServer()
    const locus = createLocusClient({ baseUrl: server.url, apiKey: KEY })
    const run = await locus.startRun('chatty', { input: { lines: 20, pauseMs: 1 } })
    const seen = await collect(locus.events(run.runId))
    expect(seen).toEqual(await storedJournal(server.runtime, run.runId))
    expect(await collect(locus.events(run.runId, { after: seen.at(-1)?.seq ?? 0 }))).toEqual([])
  })

  it('stops when the caller breaks out or aborts, closing the stream on the server', async () => {
    const server = await testServer()
    const locus = createLocusClient({ baseUrl: server.url, apiKey: KEY })
    const run = await locus.startRun('waits')
    for await (const line of locus.events(run.runId)) {
      expect(line.type).toBe('run_start')
      break
    }
    await eventually(async () => ((await locus.ready()).openStreams === 0 ? true : undefined))
    const controller = new AbortController()
    const seen: JournalLine[] = []
    for await (const line of locus.events(run.runId, { signal: controller.signal })) {
      seen.push(line)
      if (line.type === 'agent_start') controller.abort()
    }
    expect(seen.map((line) => line.type)).toEqual(['run_start', 'agent_start'])
    await eventually(async () => ((await locus.ready()).openStreams === 0 ? true : undefined))
    await locus.cancel(run.runId)
  })

  it('throws the server’s error for a run that does not exist, and gives up on a server that stays away', async () => {
    const server = await testServer()
    const locus = createLocusClient({ baseUrl: server.url, apiKey: KEY })
    await expect(collect(locus.events('no-such-run'))).rejects.toMatchObject({ code: 'not_found', status: 404 })
    const url = server.url
    await server.close()
    const waits: number[] = []
    const gone = createLocusClient({ baseUrl: url, sleep: async (ms) => void waits.push(ms) })
    const error: unknown = await collect(gone.events('r', { maxFailedConnects: 3 })).catch((thrown: unknown) => thrown)
    expect(LocusApiError.isInstance(error) && error.code).toBe('unreachable')
    expect(waits).toEqual([1000, 1000, 1000])
  })
})
