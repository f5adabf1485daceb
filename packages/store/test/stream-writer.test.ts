import { describe, expect, it } from 'vitest'
import { type RunStreams, type StreamKey, createMemoryRunStore, createStreamWriter } from '../src/index.js'

const key: StreamKey = { executionId: 'run-w', callId: 'c1-a1', attempt: 1, llmAttempt: 1 }

/** The memory store's streams, with the next `failures` appends failing as a lost connection would (writing nothing). */
async function flakyStreams(failures: number): Promise<{ streams: RunStreams; attempts: () => number }> {
  const store = createMemoryRunStore()
  await (await store.createExecution({ runId: 'run-w', kind: 'root' })).close()
  const real = store.streams as RunStreams
  let left = failures
  let attempts = 0
  return {
    attempts: () => attempts,
    streams: {
      ...real,
      append: (runId, records) => {
        attempts += 1
        if (left > 0) {
          left -= 1
          return Promise.reject(new Error('Client has encountered a connection error and is not queryable'))
        }
        return real.append(runId, records)
      },
    },
  }
}

/** A writer whose waits run at once: the retry's pause is the clock's, not this test's. */
const writerOn = (streams: RunStreams, errors: unknown[]) =>
  createStreamWriter(streams, 'run-w', {
    schedule: (fire) => {
      queueMicrotask(fire)
      return () => undefined
    },
    onError: (error) => errors.push(error),
  })

describe('createStreamWriter, when a write fails', () => {
  it('tries the batch again: every record lands once, in order, and a later batch waits behind it', async () => {
    const { streams, attempts } = await flakyStreams(2)
    const errors: unknown[] = []
    const writer = writerOn(streams, errors)
    writer.delta(key, 'one ')
    writer.delta(key, 'two ')
    writer.end(key)
    await writer.flush()
    expect(errors).toEqual([])
    expect(attempts()).toBeGreaterThanOrEqual(3)
    const read = await streams.read('run-w')
    expect(read.records.map((record) => [record.offset, record.kind, record.text])).toEqual([
      [0, 'delta', 'one '],
      [1, 'delta', 'two '],
      [2, 'end', undefined],
    ])
  })

  it('gives a batch up after two retries, tells onError, and goes on with the next', async () => {
    const { streams } = await flakyStreams(3)
    const errors: unknown[] = []
    const writer = writerOn(streams, errors)
    writer.delta(key, 'lost')
    await writer.flush()
    expect(errors).toHaveLength(1)
    writer.delta(key, 'kept')
    await writer.flush()
    expect((await streams.read('run-w')).records.map((record) => record.text)).toEqual(['kept'])
  })
})
