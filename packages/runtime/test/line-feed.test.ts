import type { JournalLine } from '@locus/journal'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createLineFeed } from '../src/line-feed.js'

function line(seq: number, type: 'log' | 'run_end' = 'log'): JournalLine {
  const common = { v: 1, seq, ts: new Date(seq).toISOString(), runId: 'r', executionId: 'r' } as const
  return type === 'run_end'
    ? { ...common, type: 'run_end', disposition: 'completed', ok: true, result: null, durationMs: 1 }
    : { ...common, type: 'log', level: 'info', message: `line ${seq}` }
}

/** A store that holds written lines in a buffer until flushed, and reads them back one tick at a time. */
function bufferedSource() {
  const stored: JournalLine[] = []
  const buffered: JournalLine[] = []
  return {
    write(written: JournalLine) {
      buffered.push(written)
    },
    source: {
      flush: async () => {
        await Promise.resolve()
        stored.push(...buffered.splice(0))
      },
      async *readHistory(afterSeq: number) {
        for (let index = 0; index < stored.length; index += 1) {
          await Promise.resolve()
          const next = stored[index]
          if (next !== undefined && next.seq > afterSeq) yield next
        }
      },
    },
  }
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('createLineFeed', () => {
  it('a subscriber joining at any point gets every line after its cursor, once, in order (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 40 }), fc.array(fc.tuple(fc.nat({ max: 40 }), fc.integer({ min: -1, max: 40 })), { minLength: 1, maxLength: 4 }), async (total, joins) => {
        const { write, source } = bufferedSource()
        const feed = createLineFeed(source)
        const received = joins.map(() => [] as number[])
        for (let seq = 0; seq < total; seq += 1) {
          joins.forEach(([joinAt, afterSeq], index) => {
            if (joinAt === seq) feed.subscribe((got) => received[index]?.push(got.seq), { afterSeq: Math.min(afterSeq, seq - 1) })
          })
          const written = line(seq, seq === total - 1 ? 'run_end' : 'log')
          write(written)
          feed.publish(written)
          if (seq % 3 === 0) await tick()
        }
        feed.end()
        for (let round = 0; round < 200; round += 1) await tick()
        joins.forEach(([joinAt, afterSeq], index) => {
          if (joinAt >= total) return
          const from = Math.min(afterSeq, joinAt - 1) + 1
          expect(received[index]).toEqual(Array.from({ length: total - from }, (_, offset) => from + offset))
        })
      }),
      { numRuns: 60 },
    )
  })

  it('events() ends after run_end, also for a subscriber that joins after the end', async () => {
    const { write, source } = bufferedSource()
    const feed = createLineFeed(source)
    const early: number[] = []
    const iterate = (async () => {
      for await (const got of feed.events()) early.push(got.seq)
    })()
    for (let seq = 0; seq < 5; seq += 1) {
      const written = line(seq, seq === 4 ? 'run_end' : 'log')
      write(written)
      feed.publish(written)
    }
    feed.end()
    await iterate
    expect(early).toEqual([0, 1, 2, 3, 4])
    const late: number[] = []
    for await (const got of feed.events({ afterSeq: 2 })) late.push(got.seq)
    expect(late).toEqual([3, 4])
  })

  it('events() of an execution that ended without run_end stops once history is read', async () => {
    const { write, source } = bufferedSource()
    const feed = createLineFeed(source)
    write(line(0))
    feed.publish(line(0))
    feed.end()
    const got: number[] = []
    for await (const received of feed.events()) got.push(received.seq)
    expect(got).toEqual([0])
  })

  it('an unsubscribed listener hears nothing more', async () => {
    const { write, source } = bufferedSource()
    const feed = createLineFeed(source)
    const got: number[] = []
    const unsubscribe = feed.subscribe((received) => got.push(received.seq))
    await tick()
    write(line(0))
    feed.publish(line(0))
    unsubscribe()
    write(line(1))
    feed.publish(line(1))
    await tick()
    expect(got).toEqual([0])
  })

  it('hooks: onCaughtUp once history is out, then onEnd once after the last line, whenever the subscriber joins and whether or not run_end came (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 30 }), fc.nat({ max: 32 }), fc.boolean(), fc.integer({ min: -1, max: 30 }), async (total, joinAt, withRunEnd, cursor) => {
        const { write, source } = bufferedSource()
        const feed = createLineFeed(source)
        const events: string[] = []
        const join = (): void => {
          feed.subscribe((got) => events.push(`line ${String(got.seq)}`), { afterSeq: Math.min(cursor, total - 1) }, {
            onCaughtUp: () => events.push('caught up'),
            onEnd: () => events.push('end'),
            onError: () => events.push('error'),
          })
        }
        for (let seq = 0; seq < total; seq += 1) {
          if (joinAt === seq) join()
          const written = line(seq, withRunEnd && seq === total - 1 ? 'run_end' : 'log')
          write(written)
          feed.publish(written)
          if (seq % 4 === 0) await tick()
        }
        feed.end()
        if (joinAt >= total) join()
        for (let round = 0; round < 200; round += 1) await tick()
        const from = Math.min(cursor, total - 1) + 1
        const lines = events.filter((event) => event.startsWith('line '))
        expect(lines).toEqual(Array.from({ length: total - from }, (_, offset) => `line ${String(from + offset)}`))
        // Every line comes before the end, which is told once, after the catch-up.
        expect(events.filter((event) => event === 'end')).toHaveLength(1)
        expect(events.at(-1)).toBe('end')
        expect(events.filter((event) => event === 'caught up')).toHaveLength(1)
        expect(events.indexOf('caught up')).toBeLessThan(events.indexOf('end'))
        expect(events).not.toContain('error')
      }),
      { numRuns: 80 },
    )
  })

  it('a subscriber that leaves before the end is not told of it', async () => {
    const { write, source } = bufferedSource()
    const feed = createLineFeed(source)
    let ends = 0
    const unsubscribe = feed.subscribe(() => undefined, {}, { onEnd: () => (ends += 1) })
    write(line(0))
    feed.publish(line(0))
    await tick()
    unsubscribe()
    feed.end()
    await tick()
    expect(ends).toBe(0)
  })
})
