// The token hub: one feed per run hands each batch to every connection, and a
// connection that joins behind the feed catches up from the store first.
import type { RunRow, StreamRead, StreamRecord } from '@locus/store'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type TokenSubscriber, createTokenHub } from '../src/token-hub.js'

/** A run's stream in memory, its reads counted; `wait` resolves when a record after `after` is there. */
function memoryStream() {
  const records: StreamRecord[] = []
  let ended: number | undefined
  const waiters = new Set<() => void>()
  const calls = { read: 0, wait: 0 }
  const wakeAll = (): void => {
    for (const wake of [...waiters]) wake()
  }
  return {
    calls,
    append(count: number): void {
      for (let index = 0; index < count; index += 1) {
        records.push({ offset: records.length, executionId: 'e1', callId: 'call-1-a1', attempt: 1, llmAttempt: 1, kind: 'delta', text: `t${String(records.length)}` })
      }
      wakeAll()
    },
    end(): void {
      ended = Date.now() - 10_000
      wakeAll()
    },
    get size(): number {
      return records.length
    },
    streams: {
      read: (_runId: string, options?: { readonly after?: number; readonly limit?: number }): Promise<StreamRead> => {
        calls.read += 1
        const after = options?.after ?? -1
        const page = records.filter((record) => record.offset > after).slice(0, options?.limit ?? Number.POSITIVE_INFINITY)
        return Promise.resolve({ records: page, firstKept: 0, next: records.length, endedAt: ended })
      },
      wait: (_runId: string, after: number, options?: { readonly signal?: AbortSignal | undefined; readonly timeoutMs?: number | undefined }): Promise<boolean> => {
        calls.wait += 1
        if (records.length - 1 > after || ended !== undefined) return Promise.resolve(true)
        return new Promise<boolean>((resolve) => {
          const wake = (): void => {
            waiters.delete(wake)
            resolve(true)
          }
          waiters.add(wake)
          options?.signal?.addEventListener('abort', () => {
            waiters.delete(wake)
            resolve(false)
          })
        })
      },
    },
    row: (): Promise<RunRow | undefined> =>
      Promise.resolve((ended === undefined ? { status: 'running' } : { status: 'completed', endedAt: new Date(ended).toISOString() }) as unknown as RunRow),
  }
}

/** A connection that records what it was handed. */
function connection(after: number) {
  const got: number[] = []
  const outcome: { value: 'ended' | 'pruned' | 'failed' | undefined } = { value: undefined }
  const subscriber: TokenSubscriber & { after: number } = {
    after,
    deliver(records) {
      for (const record of records) got.push(record.offset)
      subscriber.after = records.at(-1)?.offset ?? subscriber.after
    },
    finish(value) {
      outcome.value = value
    },
    fail() {
      outcome.value = 'failed'
    },
  }
  return { subscriber, got, outcome }
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

describe('createTokenHub', () => {
  it('hands every connection each record after its own offset exactly once, in order, wherever and whenever it joins', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.record({ kind: fc.constant('append' as const), count: fc.integer({ min: 1, max: 5 }) }), fc.record({ kind: fc.constant('join' as const), back: fc.integer({ min: -2, max: 12 }) }), fc.constant({ kind: 'tick' as const })), { maxLength: 30 }),
        async (steps) => {
          const stream = memoryStream()
          const hub = createTokenHub({ streams: stream.streams, readRow: stream.row })
          const joined: { from: number; conn: ReturnType<typeof connection> }[] = []
          for (const step of steps) {
            if (step.kind === 'append') stream.append(step.count)
            else if (step.kind === 'join') {
              // From the beginning, the middle, the end, or beyond the end (it waits there).
              const from = Math.max(-1, stream.size - 1 - step.back)
              const conn = connection(from)
              joined.push({ from, conn })
              hub.follow('run', conn.subscriber, stream.size - 1)
            } else await settle()
          }
          stream.end()
          for (let round = 0; round < 50 && joined.some(({ conn }) => conn.outcome.value === undefined); round += 1) await settle()
          for (const { from, conn } of joined) {
            expect(conn.outcome.value).toBe('ended')
            expect(conn.got).toEqual(Array.from({ length: Math.max(0, stream.size - 1 - from) }, (_, index) => from + 1 + index))
          }
          expect(hub.feeds()).toBe(0)
        },
      ),
      { numRuns: 150 },
    )
  })

  it('reads the store once per batch for a hundred connections, not once per connection', async () => {
    const stream = memoryStream()
    const hub = createTokenHub({ streams: stream.streams, readRow: stream.row })
    const connections = Array.from({ length: 100 }, () => connection(-1))
    for (const conn of connections) hub.follow('run', conn.subscriber, stream.size - 1)
    for (let batch = 0; batch < 10; batch += 1) {
      stream.append(3)
      for (let round = 0; round < 5; round += 1) await settle()
    }
    stream.end()
    for (let round = 0; round < 20; round += 1) await settle()
    for (const conn of connections) expect(conn.got).toHaveLength(30)
    // A read and a wait per batch, and two reads at the end; a connection of its own would make a hundred times that.
    expect(stream.calls.read).toBeLessThanOrEqual(25)
    expect(stream.calls.wait).toBeLessThanOrEqual(15)
  })

  it("a connection that fails to take a batch goes alone: the others keep getting theirs", async () => {
    const stream = memoryStream()
    const hub = createTokenHub({ streams: stream.streams, readRow: stream.row })
    const good = connection(-1)
    const bad = connection(-1)
    bad.subscriber.deliver = () => {
      throw new Error('socket gone')
    }
    hub.follow('run', bad.subscriber, -1)
    hub.follow('run', good.subscriber, -1)
    stream.append(3)
    for (let round = 0; round < 5; round += 1) await settle()
    stream.append(2)
    stream.end()
    for (let round = 0; round < 10; round += 1) await settle()
    expect(bad.outcome.value).toBe('failed')
    expect(good.got).toEqual([0, 1, 2, 3, 4])
    expect(good.outcome.value).toBe('ended')
  })

  it('stops reading once the last connection leaves', async () => {
    const stream = memoryStream()
    const hub = createTokenHub({ streams: stream.streams, readRow: stream.row })
    const conn = connection(-1)
    const leave = hub.follow('run', conn.subscriber, stream.size - 1)
    stream.append(2)
    await settle()
    await settle()
    expect(hub.feeds()).toBe(1)
    leave()
    await settle()
    const reads = stream.calls.read
    stream.append(2)
    await settle()
    expect(hub.feeds()).toBe(0)
    expect(stream.calls.read).toBe(reads)
    expect(conn.got).toEqual([0, 1])
  })
})
